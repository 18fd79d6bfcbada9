// AMD and Intel GPUs as the kernels people run print them, through the real holder scan, the
// DRM backends and the join: amdgpu's fdinfo from before drm-usage-stats (5.14 to 5.18) whose
// clients have no id, counted by open file (kcmp on real forked and dup'd fds) or, where the
// fds cannot be compared, per fd with a warning; shared buffers counted once, so a GPU's
// attributed memory stays within its used memory; i915 without memory figures: unknown.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "backend/backend_set.h"
#include "backend/drm/drm_backend.h"
#include "byte_units.h"
#include "collect/collector.h"
#include "drm_machine.h"
#include "output/snapshot_json.h"

namespace gpureap::testing {
namespace {

const std::string kAmd = "0000:03:00.0", kIntel = "0000:00:02.0";
constexpr unsigned kGpuId = 1234;

core::Snapshot collect(const DrmMachine& m) {
  backend::BackendSettings settings;
  settings.proc_root = m.proc_root();
  settings.dev_root = m.dev_root();
  settings.sys_root = m.sys_root();
  backend::Registry registry{backend::drm::amd_entry(), backend::drm::intel_entry()};
  auto c = collect::Collector::open({m.proc_root(), m.dev_root(), m.sys_root()},
                                    backend::BackendSet::make(registry, settings, {}));
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().text());
  return c->collect();
}

const core::DriverProcess* listed_on(const core::Gpu& g, pid_t pid) {
  auto it = std::find_if(g.processes.begin(), g.processes.end(),
                         [&](const core::DriverProcess& p) { return p.pid == pid; });
  return it == g.processes.end() ? nullptr : &*it;
}

std::vector<pid_t> listed_pids(const core::Gpu& g) {
  std::vector<pid_t> out;
  for (const auto& p : g.processes) out.push_back(p.pid);
  return out;
}

size_t warnings_with(const core::Snapshot& s, const std::string& text) {
  auto all = s.all_warnings();
  return static_cast<size_t>(std::count_if(
      all.begin(), all.end(), [&](auto& w) { return w.find(text) != std::string::npos; }));
}

// Ubuntu 22.04's kernel: one AMD GPU, its fdinfo in the pre-standard keys, and KFD.
void ubuntu_22_04_amd(const DrmMachine& m, uint64_t vram_used) {
  m.kernel("5.15.0-91-generic");
  m.amd_gpu(0, 128, kAmd, 16 * kGiB, vram_used);
  m.kfd_node(1, kGpuId, 0, 0x03);
}

// A fixture procfs names no real process, so open files cannot be compared; amdgpu's pasid names
// each client all the same (one GPU address space per open file, shared by dup'd and inherited
// fds): a client is counted once, and the GPU's attributed memory stays within its used memory.
TEST(DrmFormats, AmdgpuBeforeClientIdsWithoutKcmpCountsClientsByPasid) {
  DrmMachine m;
  ubuntu_22_04_amd(m, 1 * kGiB);
  // A trainer (100) with one client (512 MiB VRAM) held by fd 5 and its dup 6, inherited by
  // its worker (101), and /dev/kfd; KFD lists it with 256 MiB. Another job (200), 256 MiB.
  const std::string trainer = DrmMachine::amdgpu_5_15_fdinfo(kAmd, 32771, 512 * 1024, 4096);
  m.process(100, "trainer", 1, 100, 100);
  m.open_fd(100, 5, "dri/renderD128", trainer);
  m.open_fd(100, 6, "dri/renderD128", trainer);
  m.open_fd(100, 7, "kfd", "");
  m.kfd_process(100, kGpuId, 256 * kMiB);
  m.process(101, "worker", 100, 100, 100);
  m.open_fd(101, 5, "dri/renderD128", trainer);
  m.process(200, "render", 1, 200, 200);
  m.open_fd(200, 3, "dri/renderD128", DrmMachine::amdgpu_5_15_fdinfo(kAmd, 32772, 256 * 1024, 0));

  auto s = collect(m);
  ASSERT_EQ(s.drivers.gpus.size(), 1u);
  ASSERT_TRUE(s.proc.open_files_unknown.has_value());
  const auto& g = s.drivers.gpus[0];
  EXPECT_EQ(s.drivers.backends[0].driver_version, "5.15.0-91-generic");
  EXPECT_EQ(listed_pids(g), (std::vector<pid_t>{100, 200}));
  EXPECT_EQ(listed_on(g, 100)->used_bytes, 512 * kMiB);  // three fds, one client; KFD's is less
  EXPECT_EQ(listed_on(g, 100)->sharers, std::vector<pid_t>{101});
  EXPECT_EQ(listed_on(g, 100)->kind, core::GpuProcessKind::Compute);
  ASSERT_EQ(listed_on(g, 100)->regions.size(), 3u);
  EXPECT_EQ(listed_on(g, 100)->regions[1].name, "gtt");
  EXPECT_EQ(listed_on(g, 100)->regions[1].resident_bytes, 4 * kMiB);
  EXPECT_EQ(listed_on(g, 200)->used_bytes, 256 * kMiB);
  EXPECT_EQ(*s.drivers.backends[0].detail("drm_clients"), "2");
  auto m_ = s.memory_summary(g);
  EXPECT_EQ(m_.attributed_bytes, 768 * kMiB);
  EXPECT_EQ(m_.unattributed_bytes, 256 * kMiB);
  EXPECT_LE(m_.attributed_bytes + m_.ghost_bytes, *g.memory.used_bytes);
  EXPECT_EQ(warnings_with(s, "counted per fd"), 0u);
}

// Without a pasid either (a driver that prints no client number), nothing names the client:
// every fd is a client of its own, and the snapshot says so.
TEST(DrmFormats, ClientsWithoutAnyNumberAndWithoutKcmpAreCountedPerFdAndSaySo) {
  DrmMachine m;
  ubuntu_22_04_amd(m, 2 * kGiB);
  std::string no_pasid = DrmMachine::amdgpu_5_15_fdinfo(kAmd, 0, 512 * 1024, 0);
  m.process(100, "trainer", 1, 100, 100);
  m.open_fd(100, 5, "dri/renderD128", no_pasid);
  m.open_fd(100, 6, "dri/renderD128", no_pasid);
  auto s = collect(m);
  EXPECT_EQ(listed_on(s.drivers.gpus[0], 100)->used_bytes, 1 * kGiB);
  auto all = s.all_warnings();
  auto per_fd = std::find_if(all.begin(), all.end(), [](const std::string& w) {
    return w.starts_with("DRM clients counted per fd: 2 fd(s)");
  });
  ASSERT_NE(per_fd, all.end());
  EXPECT_NE(per_fd->find("the procfs does not name gpureap's own processes"), std::string::npos)
      << "it says why: " << *per_fd;
}

// The same machine with real processes: this test's process and its children hold the fd
// numbers the tree lists, on the stand-in node, dup'd and inherited, so kcmp groups them as
// the kernel does and each id-less client is counted once.
class LiveOpenFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ubuntu_22_04_amd(m_, 2 * kGiB);
    m_.names_own_processes();
    const std::string node = m_.path("dev/dri/renderD128");
    first_ = ::open(node.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(first_, 0);
    dup_ = ::fcntl(first_, F_DUPFD_CLOEXEC, 0);
    ASSERT_GE(dup_, 0);
    worker_ = spawn(-1);     // inherits first_ and dup_
    other_ = spawn(first_);  // opens the node itself: another client, on the fd number first_
    ASSERT_GT(worker_, 0);
    ASSERT_GT(other_, 0);
    self_ = ::getpid();
  }
  void TearDown() override {
    for (pid_t p : {worker_, other_})
      if (p > 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
    if (first_ >= 0) ::close(first_);
    if (dup_ >= 0) ::close(dup_);
  }
  // A child that sleeps until killed; with `reopen`, it first opens the node again into that
  // fd number (a new open file description). Ready when this returns.
  pid_t spawn(int reopen) {
    int ready[2];
    if (::pipe(ready) != 0) return -1;
    pid_t pid = ::fork();
    if (pid == 0) {
      if (reopen >= 0) {
        int fd = ::open(m_.path("dev/dri/renderD128").c_str(), O_RDONLY);
        if (fd < 0 || ::dup2(fd, reopen) != reopen) ::_exit(1);
        ::close(fd);
      }
      char ok = 1;
      if (::write(ready[1], &ok, 1) != 1) ::_exit(1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char ok = 0;
    bool started = ::read(ready[0], &ok, 1) == 1;
    ::close(ready[0]);
    return started ? pid : -1;
  }
  // The tree's view of a process holding these fds of the node, each with this fdinfo.
  void holds(pid_t pid, const std::string& comm, pid_t ppid,
             const std::vector<std::pair<int, std::string>>& fds) {
    m_.process(pid, comm, ppid, pid, pid);
    for (const auto& [fd, text] : fds) m_.open_fd(pid, fd, "dri/renderD128", text);
  }

  DrmMachine m_;
  int first_ = -1, dup_ = -1;
  pid_t self_ = 0, worker_ = -1, other_ = -1;
};

TEST_F(LiveOpenFiles, AmdgpuClientsWithoutIdAreTheirOpenFilesCountedOnce) {
  const std::string shared = DrmMachine::amdgpu_5_15_fdinfo(kAmd, 32771, 512 * 1024, 4096);
  const std::string own = DrmMachine::amdgpu_5_15_fdinfo(kAmd, 32772, 256 * 1024, 0);
  holds(self_, "trainer", 1, {{first_, shared}, {dup_, shared}});
  holds(worker_, "worker", self_, {{first_, shared}, {dup_, shared}});
  holds(other_, "render", self_, {{first_, own}});

  auto s = collect(m_);
  ASSERT_FALSE(s.proc.open_files_unknown) << *s.proc.open_files_unknown;
  const auto& g = s.drivers.gpus[0];
  const pid_t holder = std::min(self_, worker_);
  EXPECT_EQ(*s.drivers.backends[0].detail("drm_clients"), "2");
  std::vector<pid_t> pids{holder, other_};
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(listed_pids(g), pids);
  ASSERT_NE(listed_on(g, holder), nullptr);
  EXPECT_EQ(listed_on(g, holder)->used_bytes, 512 * kMiB);  // four fds, one client
  EXPECT_EQ(listed_on(g, holder)->sharers, std::vector<pid_t>{std::max(self_, worker_)});
  EXPECT_EQ(listed_on(g, holder)->regions[1].resident_bytes, 4 * kMiB);
  ASSERT_NE(listed_on(g, other_), nullptr);
  EXPECT_EQ(listed_on(g, other_)->used_bytes, 256 * kMiB);  // same fd number, its own open file
  EXPECT_EQ(s.memory_summary(g).attributed_bytes, 768 * kMiB);
  EXPECT_EQ(warnings_with(s, "counted per fd"), 0u);
  EXPECT_EQ(warnings_with(s, "disagree"), 0u);
}

// With drm-client-id, the open files cross-check it: two open files claiming one id are
// reported, and the id counts.
TEST_F(LiveOpenFiles, ClientIdsAreCheckedAgainstTheOpenFiles) {
  const std::string id7 = DrmMachine::amdgpu_fdinfo(kAmd, 7, 512 * 1024, 0);
  holds(self_, "trainer", 1, {{first_, id7}, {dup_, id7}});
  holds(worker_, "worker", self_, {{first_, id7}, {dup_, id7}});
  auto agreeing = collect(m_);
  EXPECT_EQ(warnings_with(agreeing, "disagree"), 0u);
  EXPECT_EQ(*agreeing.drivers.backends[0].detail("drm_clients"), "1");

  holds(other_, "render", self_, {{first_, id7}});  // another open file, the same id
  auto s = collect(m_);
  // Which of the two is reported depends on the PIDs' order: that there is a disagreement.
  EXPECT_EQ(warnings_with(s, "drm-client-id and the open files disagree for "), 1u);
  EXPECT_EQ(*s.drivers.backends[0].detail("drm_clients"), "1");
}

// amdgpu since 6.9 (drm_print_memory_stats): drm-shared-vram. A compositor (100) and an
// application (200) share 768 MiB of buffers; a third client (300) shares 256 MiB of them.
// Summing resident memory would count the shared buffers once per client, 3 GiB on a GPU that
// uses 2 GiB + 64 MiB; counted once, the attributed memory is 2 GiB.
TEST(DrmFormats, SharedBuffersAreCountedOnceAndAttributedStaysWithinUsed) {
  DrmMachine m;
  m.amd_gpu(0, 128, kAmd, 16 * kGiB, 2 * kGiB + 64 * kMiB);
  auto client = [&](unsigned id, uint64_t resident_mib, uint64_t shared_mib) {
    return "drm-driver:\tamdgpu\ndrm-client-id:\t" + std::to_string(id) + "\ndrm-pdev:\t" + kAmd +
           "\ndrm-total-vram:\t" + std::to_string(resident_mib) + " MiB\ndrm-shared-vram:\t" +
           std::to_string(shared_mib) + " MiB\ndrm-resident-vram:\t" +
           std::to_string(resident_mib) + " MiB\ndrm-memory-vram:\t" +
           std::to_string(resident_mib * 1024) + " KiB\ndrm-total-gtt:\t2 MiB\n" +
           "drm-shared-gtt:\t2 MiB\ndrm-resident-gtt:\t2 MiB\n";
  };
  m.process(100, "gnome-shell", 1, 100, 100);
  m.open_fd(100, 12, "dri/renderD128", client(1, 1024, 768));
  m.process(200, "blender", 1, 200, 200);
  m.open_fd(200, 9, "dri/renderD128", client(2, 1536, 768));
  m.process(300, "mpv", 1, 300, 300);
  m.open_fd(300, 4, "dri/renderD128", client(3, 512, 256));

  auto s = collect(m);
  const auto& g = s.drivers.gpus[0];
  // The compositor and the application tie at 768 MiB: the lower PID counts it.
  EXPECT_EQ(listed_on(g, 100)->used_bytes, 1024 * kMiB);
  EXPECT_EQ(listed_on(g, 200)->used_bytes, 768 * kMiB);  // its private part
  EXPECT_EQ(listed_on(g, 300)->used_bytes, 256 * kMiB);
  auto summary = s.memory_summary(g);
  EXPECT_EQ(summary.attributed_bytes, 2 * kGiB);
  EXPECT_LE(summary.attributed_bytes, *g.memory.used_bytes);
  EXPECT_EQ(summary.unattributed_bytes, 64 * kMiB);

  // Each process's shared figure, as its clients printed it, is in the JSON.
  const auto* row = s.row(200);
  ASSERT_NE(row, nullptr);
  auto j = output::row_to_json(s, *row);
  const auto& regions = j["gpus"][0]["regions"];
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[0]["name"], "vram");
  EXPECT_EQ(regions[0]["shared_bytes"], 768 * kMiB);
  EXPECT_EQ(regions[0]["resident_bytes"], 1536 * kMiB);
  EXPECT_EQ(regions[1]["shared_bytes"], 2 * kMiB);
  EXPECT_EQ(j["gpus"][0]["used_bytes"], 768 * kMiB);
}

// i915 on the LTS kernels from 5.19 until its memory stats prints engines only, and on 5.15
// no usage stats at all: its clients' memory is unknown, never 0.
TEST(DrmFormats, I915WithoutMemoryFiguresLeavesMemoryUnknown) {
  DrmMachine m;
  m.kernel("6.1.0-18-amd64");
  m.gpu("i915", 0x8086, 0x4680, 0, 128, kIntel);
  m.process(300, "firefox", 1, 300, 300);
  m.open_fd(300, 9, "dri/renderD128",
            "drm-driver:\ti915\ndrm-pdev:\t" + kIntel +
                "\ndrm-client-id:\t12\ndrm-engine-render:\t25662044495 ns\n"
                "drm-engine-copy:\t0 ns\ndrm-engine-video:\t0 ns\ndrm-engine-capacity-video:\t2\n"
                "drm-engine-video-enhance:\t0 ns\n");
  m.process(400, "old-kernel-client", 1, 400, 400);  // as 5.15 shows it: no drm- key
  m.open_fd(400, 3, "dri/renderD128", "ino:\t1183\n");

  auto s = collect(m);
  ASSERT_EQ(s.drivers.gpus.size(), 1u);
  const auto& g = s.drivers.gpus[0];
  EXPECT_EQ(listed_pids(g), std::vector<pid_t>{300});
  EXPECT_FALSE(listed_on(g, 300)->used_bytes.has_value());
  EXPECT_TRUE(listed_on(g, 300)->regions.empty());
  const auto* row = s.row(300);
  ASSERT_NE(row, nullptr);
  ASSERT_EQ(row->gpus.size(), 1u);
  EXPECT_FALSE(row->gpus[0].used_bytes.has_value());
  EXPECT_TRUE(output::row_to_json(s, *row)["gpus"][0]["used_bytes"].is_null());
  // The 5.15 client is a holder the driver lists nothing for: no figure at all.
  const auto* old = s.row(400);
  ASSERT_NE(old, nullptr);
  EXPECT_FALSE(old->listed_by_driver);
  EXPECT_TRUE(old->gpus.empty());
  ASSERT_TRUE(old->process);
  EXPECT_TRUE(old->process->holds_device());
  EXPECT_EQ(s.memory_summary(g).attributed_bytes, 0u);
  EXPECT_FALSE(s.memory_summary(g).unattributed_bytes.has_value());
  EXPECT_EQ(warnings_with(s, "counted per fd"), 0u);  // i915 prints an id
}

}  // namespace
}  // namespace gpureap::testing
