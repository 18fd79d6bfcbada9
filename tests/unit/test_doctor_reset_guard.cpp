// What blocks a GPU reset, and the refusal that names exactly those processes with the command
// that ends them (src/doctor/reset_guard.cpp).
#include <gtest/gtest.h>

#include <algorithm>

#include "doctor/reset_guard.h"
#include "reap/select.h"
#include "snapshot_builders.h"

namespace gpureap::doctor {
namespace {

using namespace gpureap::testing;

// Gone PID 4242 is listed on GPUs 0 and 1: worker 4250 keeps its context through GPU 1's file
// only, worker 4251 through GPU 0's. PID 4260 is listed on GPU 0 and holds GPU 0's file.
core::Snapshot two_gpus() {
  return make_snapshot(
      {proc(1, 0, 1), holder(4250, 1, 4242, 1), holder(4251, 1, 4242, 0), holder(4260, 1, 4260, 0)},
      {gpu(0, 0, 12 * GiB, {listed(4242, 8 * GiB), listed(4260, 4 * GiB)}),
       gpu(1, 1, 8 * GiB, {listed(4242, 8 * GiB)})});
}

std::vector<pid_t> pids_of(const std::vector<ResetBlocker>& blockers) {
  std::vector<pid_t> out;
  for (const auto& b : blockers) out.push_back(b.pid);
  return out;
}

TEST(ResetGuard, TheRefusalNamesTheBlockersAndTheCommandForExactlyThem) {
  auto s = two_gpus();
  auto blockers = reset_blockers(s, 0);
  ASSERT_TRUE(blockers) << blockers.error().message;
  EXPECT_EQ(pids_of(*blockers), (std::vector<pid_t>{4251, 4260}));
  // `kill --gpu 0` would also end 4250, which blocks nothing on GPU 0.
  auto planned = reap::select_targets(s, {.gpu = 0u}, reap::Caller{});
  ASSERT_TRUE(planned);
  EXPECT_TRUE(planned->reasons.count(4250));
  EXPECT_EQ(reset_refusal(0, *blockers),
            (std::vector<std::string>{
                "refusing to reset GPU 0: these processes use it, and a reset would end them:",
                "  PID 4251 (p4251): holds /dev/nvidia0 on fd 5",
                "  PID 4260 (p4260): listed by the driver with 4.0 GiB; holds /dev/nvidia0 on fd 5",
                "  end them first: gpureap kill 4251 4260"}));
}

TEST(ResetGuard, OneBlockerIsNamedAsOneAndItsNameIsEscaped) {
  auto p = holder(300, 1, 300);
  p.stat.comm = "evil\nrm -rf /";
  auto s = make_snapshot({proc(1, 0, 1), p}, {gpu(0, 0, 0, {})});
  auto blockers = reset_blockers(s, 0);
  ASSERT_TRUE(blockers);
  EXPECT_EQ(reset_refusal(0, *blockers),
            (std::vector<std::string>{
                "refusing to reset GPU 0: this process uses it, and a reset would end it:",
                "  PID 300 (evil\\nrm -rf /): holds /dev/nvidia0 on fd 5",
                "  end it first: gpureap kill 300"}));
}

TEST(ResetGuard, APausedJobIsNamedAsWhatBlocksTheReset) {
  // 300 is stopped (Ctrl-Z) on GPU 0; 301 runs there.
  auto s = make_snapshot(
      {proc(1, 0, 1), holder(300, 1, 300, 0, 'T'), holder(301, 1, 301, 0)},
      {gpu(0, 0, 4 * GiB, {listed(300, 2 * GiB), listed(301, 2 * GiB)}), gpu(1, 1, 0, {})});
  EXPECT_EQ(paused_reset_note(s, 0), "reset is blocked by paused PID 300; resume or end it first");
  EXPECT_EQ(paused_reset_note(s, 1), std::nullopt) << "nothing paused holds GPU 1";
  auto blockers = reset_blockers(s, 0);
  ASSERT_TRUE(blockers);
  auto lines = reset_refusal(s, 0, *blockers);
  ASSERT_EQ(lines.size(), 5u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[3], "  reset is blocked by paused PID 300; resume or end it first");
  EXPECT_EQ(lines[4], "  end them first: gpureap kill 300 301");
  // Without a paused blocker the refusal is as it was.
  auto running = make_snapshot({proc(1, 0, 1), holder(301, 1, 301, 0)},
                               {gpu(0, 0, 2 * GiB, {listed(301, 2 * GiB)})});
  auto one = reset_blockers(running, 0);
  ASSERT_TRUE(one);
  EXPECT_EQ(reset_refusal(running, 0, *one), reset_refusal(0, *one));
  EXPECT_EQ(paused_reset_note(running, 0), std::nullopt);
}

}  // namespace
}  // namespace gpureap::doctor
