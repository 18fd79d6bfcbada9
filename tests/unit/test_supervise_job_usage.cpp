#include <gtest/gtest.h>

#include <set>

#include "snapshot_builders.h"
#include "supervise/job_usage.h"
#include "supervise/release_check.h"

namespace gpureap::supervise {
namespace {

using testing::GiB;
using testing::gpu;
using testing::holder;
using testing::listed;
using testing::make_snapshot;
using testing::proc;

// The job: 100 (live, start 1100), 101 (gone from /proc). 200 is someone else's.
IsJobProcess job_of(std::set<pid_t> pids) {
  return [pids](pid_t pid, std::optional<uint64_t> start) {
    return pids.count(pid) && (!start || *start == 1000 + static_cast<uint64_t>(pid));
  };
}

core::Snapshot two_gpus() {
  return make_snapshot(
      {holder(100, 1, 100, 0), holder(200, 1, 200, 1), proc(300, 1, 300)},
      {gpu(0, 0, 20 * GiB, {listed(100, 4 * GiB), listed(101, 2 * GiB), listed(200, 8 * GiB)}),
       gpu(1, 1, 9 * GiB, {listed(200, 8 * GiB), listed(100, std::nullopt)})});
}

TEST(SuperviseJobUsage, SumsTheJobsListedMemoryPerGpu) {
  auto usage = job_gpu_usage(two_gpus(), job_of({100, 101}));
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].index, 0u);
  EXPECT_EQ(usage[0].bytes, 6 * GiB);
  EXPECT_EQ(usage[0].processes, 2u);
  EXPECT_EQ(usage[1].index, 1u);
  EXPECT_EQ(usage[1].bytes, 0u) << "unknown amounts add nothing";
  EXPECT_EQ(usage[1].processes, 1u);
  EXPECT_TRUE(job_gpu_usage(two_gpus(), job_of({300})).empty());
}

TEST(SuperviseJobUsage, RecycledPidIsNotTheJobs) {
  // 100 in /proc now has another start time than the job's 100.
  auto snap = two_gpus();
  auto is_job = [](pid_t pid, std::optional<uint64_t> start) {
    return pid == 100 && (!start || *start == 7);
  };
  EXPECT_TRUE(job_gpu_usage(snap, is_job).empty());
}

TEST(SuperviseJobUsage, HeldMemoryAndFilesAfterTeardown) {
  auto snap = two_gpus();
  auto memory = memory_held_by_job(snap, job_of({100, 101}));
  ASSERT_EQ(memory.size(), 3u);
  // By pid, then GPU.
  EXPECT_EQ(memory[0].pid, 100);
  EXPECT_EQ(memory[0].gpu, 0u);
  EXPECT_TRUE(memory[0].process_alive);
  EXPECT_EQ(memory[1].pid, 100);
  EXPECT_EQ(memory[1].gpu, 1u);
  EXPECT_FALSE(memory[1].used_bytes) << "unknown stays unknown";
  EXPECT_EQ(memory[2].pid, 101);
  EXPECT_FALSE(memory[2].process_alive);
  EXPECT_EQ(memory[2].used_bytes, 2 * GiB);
  auto files = files_held_by_job(snap, job_of({100, 101}));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].pid, 100);
  EXPECT_EQ(files[0].paths, (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl"}));
}

TEST(SuperviseJobUsage, ReleaseVerdictUsesTheDriverWhenItAnswers) {
  ReleaseCheck check;
  judge_release(two_gpus(), job_of({300}), check);
  EXPECT_EQ(check.method, "driver");
  EXPECT_TRUE(check.released);
  judge_release(two_gpus(), job_of({101}), check);
  EXPECT_FALSE(check.released) << "a gone PID still listed holds memory";
  EXPECT_EQ(check.memory.size(), 1u);
  EXPECT_TRUE(check.files.empty());
}

TEST(SuperviseJobUsage, WithoutADriverOnlyDeviceFilesCount) {
  auto snap = two_gpus();
  snap.drivers.backends.at(0).available = false;
  ReleaseCheck check;
  judge_release(snap, job_of({101}), check);
  EXPECT_EQ(check.method, "device-files");
  EXPECT_TRUE(check.released);
  judge_release(snap, job_of({100}), check);
  EXPECT_FALSE(check.released);
  EXPECT_TRUE(check.memory.empty());
  ASSERT_EQ(check.files.size(), 1u);
}

// The helpers of the incomplete-view tests, in a namespace of their own (unity batches).
namespace incomplete_release {

// The collector's words for a scan that ran out of descriptors (collect/collector.cpp).
const std::string kScanFailure =
    "1 process could not be scanned (/proc/4242/fd: Too many open files): gpureap ran out of "
    "file descriptors (its limit is 6, hard limit 6); raise the limit of open files, hard and "
    "soft, and run it again: `ulimit -Hn 1024; ulimit -n 1024` in a root shell, LimitNOFILE=1024 "
    "in its systemd unit";

// The job (100, holding nothing now; 101 gone) and someone else's 200, with no driver answering.
core::Snapshot no_driver(std::vector<core::HostProcess> ps) {
  auto snap = make_snapshot(std::move(ps), {gpu(0, 0, 20 * GiB, {})});
  snap.drivers.backends.at(0).available = false;
  return snap;
}

}  // namespace incomplete_release

// Without a driver, "no process of the job holds a GPU device file" is the scan's word: a scan
// that could not read everything cannot give it, and the check says why and what to do.
TEST(SuperviseJobUsage, WithoutADriverAnIncompleteScanCannotVerifyTheRelease) {
  using incomplete_release::kScanFailure;
  auto snap = incomplete_release::no_driver({proc(100, 1, 100), holder(200, 1, 200, 0)});
  snap.proc.scan_failures = {kScanFailure};
  ReleaseCheck check;
  judge_release(snap, job_of({100, 101}), check);
  EXPECT_EQ(check.method, "device-files");
  EXPECT_FALSE(check.released);
  EXPECT_TRUE(check.memory.empty());
  EXPECT_TRUE(check.files.empty());
  ASSERT_TRUE(check.error.has_value());
  EXPECT_EQ(check.error->message,
            "no driver answered, and the holder scan failed: " + kScanFailure);
  EXPECT_EQ(check.error->hint,
            "processes of the job may still hold GPU device files; `gpureap ps` shows them once "
            "gpureap can read every process");

  // A file seen held is held, whatever the scan missed: still held, no doubt.
  judge_release(snap, job_of({200}), check);
  EXPECT_FALSE(check.released);
  EXPECT_EQ(check.files.size(), 1u);
  EXPECT_FALSE(check.error.has_value());

  // With a driver that answers, its lists are the word on the memory: released.
  auto with_driver = two_gpus();
  with_driver.proc.scan_failures = {kScanFailure};
  judge_release(with_driver, job_of({300}), check);
  EXPECT_EQ(check.method, "driver");
  EXPECT_TRUE(check.released);
  EXPECT_FALSE(check.error.has_value());

  // The same job read whole: released, as before.
  judge_release(incomplete_release::no_driver({proc(100, 1, 100), holder(200, 1, 200, 0)}),
                job_of({100, 101}), check);
  EXPECT_TRUE(check.released);
  EXPECT_FALSE(check.error.has_value());
}

// A live job process whose open files gpureap may not read cannot be said to hold none; another
// user's unreadable process is not the job's and changes nothing.
TEST(SuperviseJobUsage, WithoutADriverAJobProcessItCannotInspectLeavesTheReleaseUnverified) {
  auto job = proc(100, 1, 100);
  job.fds_readable = false;
  auto other = proc(200, 1, 200);
  other.fds_readable = false;
  ReleaseCheck check;
  judge_release(incomplete_release::no_driver({job, other}), job_of({100}), check);
  EXPECT_FALSE(check.released);
  ASSERT_TRUE(check.error.has_value());
  EXPECT_EQ(check.error->message,
            "no driver answered, and 1 process of the job could not be inspected (their open "
            "files are not readable)");
  EXPECT_EQ(check.error->hint, "run gpureap as root or grant it CAP_SYS_PTRACE");

  auto readable = proc(100, 1, 100);
  judge_release(incomplete_release::no_driver({readable, other}), job_of({100}), check);
  EXPECT_TRUE(check.released);
  EXPECT_FALSE(check.error.has_value());
}

}  // namespace
}  // namespace gpureap::supervise
