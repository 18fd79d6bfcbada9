// `gpureap kill` on an AMD GPU: a real process holding /dev/kfd and a render node (stand-ins),
// listed by KFD in a sysfs fixture. The kill counts only once KFD has dropped the PID and the
// GPU's used VRAM is back, as the kernel does when the last holder of the context is gone; a
// listing that stays is reported, never counted as released.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "drm_machine.h"
#include "support.h"

namespace gpureap::testing {
namespace {

constexpr unsigned kGpuId = 4321;

class KillAmd : public ::testing::Test {
 protected:
  void SetUp() override {
    m_.amd_gpu(0, 128, kAmd, 16 * GiB, 3 * GiB);
    m_.kfd_node(1, kGpuId, 0, 0x03);
  }

  // A ROCm job: it opens /dev/kfd and the render node, and KFD lists it with 2 GiB.
  std::unique_ptr<Child> rocm_job() {
    Ready ready;
    auto job = std::make_unique<Child>([&] {
      hold(m_.path("dev/kfd"));
      hold(m_.path("dev/dri/renderD128"));
      ready.signal();
    });
    ready.wait();
    m_.kfd_process(job->pid(), kGpuId, 2 * GiB);
    return job;
  }

  RunResult kill(pid_t pid, const std::string& wait) {
    return run_gpureap({"kill", "--json", "--dev-root", m_.dev_root(), "--sys-root", m_.sys_root(),
                        "--nvml-library", kNoNvml, std::to_string(pid), "--yes", "--wait-release",
                        wait});
  }

  DrmMachine m_;
};

TEST_F(KillAmd, TheKillCountsOnceKfdDropsTheJobAndItsVramIsBack) {
  auto job = rocm_job();
  pid_t pid = job->pid();
  // The kernel's part: once the job has exited, KFD drops it and frees its VRAM, but only after
  // gpureap has read the listing with the job gone (an open of its file, told by inotify): the
  // kill must wait for the release, not count the exit as one.
  const std::string listing =
      m_.path("sys/class/kfd/kfd/proc/" + std::to_string(pid) + "/vram_" + std::to_string(kGpuId));
  const int reads = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(reads, 0);
  ASSERT_GE(::inotify_add_watch(reads, listing.c_str(), IN_OPEN), 0);
  std::atomic<bool> done{false};
  std::atomic<bool> read_after_exit{false};
  std::thread kernel([&] {
    while (!done && is_alive(pid)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    char events[4096];
    while (::read(reads, events, sizeof events) > 0) {  // the reads before the exit
    }
    while (!done && !read_after_exit) {
      pollfd p{reads, POLLIN, 0};
      read_after_exit = ::poll(&p, 1, 50) == 1 && ::read(reads, events, sizeof events) > 0;
    }
    m_.remove("sys/class/kfd/kfd/proc/" + std::to_string(pid));
    m_.set_vram_used(kAmd, 1 * GiB);
  });
  auto r = kill(pid, "60s");
  done = true;
  kernel.join();
  ::close(reads);
  EXPECT_TRUE(read_after_exit) << "the kill did not read KFD's listing after the job exited";
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = parse_output(r);
  auto outcome = entry_of(doc["outcomes"], pid);
  EXPECT_EQ(outcome["outcome"], "released") << r.out;
  EXPECT_EQ(outcome["released_bytes"], 2 * GiB) << r.out;
}

TEST_F(KillAmd, AListingKfdKeepsIsNotReleased) {
  auto job = rocm_job();
  pid_t pid = job->pid();
  auto r = kill(pid, "500ms");  // KFD keeps listing it: nothing frees the VRAM
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto doc = parse_output(r);
  auto outcome = entry_of(doc["outcomes"], pid);
  EXPECT_NE(outcome["outcome"], "released") << r.out;
  EXPECT_FALSE(is_alive(pid));
}

}  // namespace
}  // namespace gpureap::testing
