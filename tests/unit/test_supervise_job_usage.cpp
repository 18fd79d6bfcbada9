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

}  // namespace
}  // namespace gpureap::supervise
