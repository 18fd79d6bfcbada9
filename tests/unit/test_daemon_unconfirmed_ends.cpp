#include <gtest/gtest.h>

#include "daemon/unconfirmed_ends.h"

namespace gpureap::daemon {
namespace unconfirmed_ends_test {

using Clock = UnconfirmedEnds::Clock;
using std::chrono::milliseconds;

std::vector<pid_t> pids_of(const std::vector<std::pair<pid_t, UnconfirmedEnds::End>>& due) {
  std::vector<pid_t> out;
  for (const auto& [pid, e] : due) out.push_back(pid);
  return out;
}

TEST(UnconfirmedEnds, AReportIsCheckedAtGrowingDelaysThenNotUntilTheNextEvent) {
  UnconfirmedEnds ends;
  const Clock::time_point t0{};
  ends.reported(100, 0, 5000, t0);
  EXPECT_TRUE(ends.due(t0).empty());
  auto now = t0;
  for (auto delay : UnconfirmedEnds::kRecheckDelays) {
    ASSERT_EQ(ends.next(), now + delay);
    now += delay;
    auto due = ends.due(now);
    ASSERT_EQ(pids_of(due), std::vector<pid_t>{100});
    ends.still_running(100, due[0].second.checks, now);
  }
  EXPECT_FALSE(ends.next()) << "checked again after the last delay with no event";
  EXPECT_TRUE(ends.due(now + std::chrono::hours(1)).empty());
  // Another thread's exit starts the delays again, with its status.
  ends.reported(100, 9, std::nullopt, now);
  ASSERT_NE(ends.find(100), nullptr);
  EXPECT_EQ(ends.find(100)->wait_status, 9);
  EXPECT_EQ(ends.find(100)->start_ticks, 5000u) << "a report without a start keeps the known one";
  EXPECT_EQ(ends.next(), now + UnconfirmedEnds::kRecheckDelays[0]);
}

// An overflow may have lost the last thread's exit: what has a start time is checked at once,
// with no status to claim; what has none may be another process under the PID, and is dropped.
TEST(UnconfirmedEnds, LostEventsCheckEveryEndWithAStartAtOnceAndClaimNoStatus) {
  UnconfirmedEnds ends;
  const Clock::time_point t0{};
  ends.reported(100, 0, 5000, t0);
  ends.reported(200, 0, std::nullopt, t0);
  ends.reported(300, 256, 7000, t0);
  // 300 has had all its checks: it waits for an event that the overflow may have lost.
  auto now = t0;
  for (auto delay : UnconfirmedEnds::kRecheckDelays) {
    now += delay;
    ends.still_running(300, ends.find(300)->checks, now);
  }
  ASSERT_EQ(ends.find(300)->due, Clock::time_point::max());

  ends.events_lost(now);
  EXPECT_EQ(pids_of(ends.due(now)), (std::vector<pid_t>{100, 300}));
  EXPECT_FALSE(ends.contains(200));
  for (const auto& [pid, e] : ends.due(now)) {
    EXPECT_FALSE(e.wait_status) << pid;
    EXPECT_EQ(e.checks, 0u) << pid;
  }
  EXPECT_EQ(ends.find(300)->start_ticks, 7000u);
  EXPECT_EQ(ends.next(), now);
}

// A scan found the leader exited with no event for it: followed, with nothing to check till an
// event; what an event already reported is not overwritten.
TEST(UnconfirmedEnds, AWatchedProcessWaitsForAnEventAndLeavesAReportedOneAlone) {
  UnconfirmedEnds ends;
  const Clock::time_point t0{};
  ends.watch(100, 5000);
  ASSERT_TRUE(ends.contains(100));
  EXPECT_FALSE(ends.find(100)->wait_status);
  EXPECT_FALSE(ends.next());
  EXPECT_TRUE(ends.due(t0 + std::chrono::hours(1)).empty());
  ends.reported(200, 11, 6000, t0);
  ends.watch(200, 6000);
  EXPECT_EQ(ends.find(200)->wait_status, 11);
  EXPECT_EQ(ends.next(), t0 + UnconfirmedEnds::kRecheckDelays[0]);
  // Lost events: the watched one is checked at once too, having a start time.
  ends.events_lost(t0);
  EXPECT_EQ(pids_of(ends.due(t0)), (std::vector<pid_t>{100, 200}));
}

TEST(UnconfirmedEnds, AForgottenEndIsNeitherDueNorKept) {
  UnconfirmedEnds ends;
  const Clock::time_point t0{};
  ends.reported(100, 0, 5000, t0);
  ends.forget(100);
  EXPECT_FALSE(ends.contains(100));
  EXPECT_TRUE(ends.due(t0 + milliseconds(10)).empty());
  EXPECT_FALSE(ends.next());
  ends.still_running(100, 0, t0);  // checked meanwhile: still not kept
  EXPECT_FALSE(ends.contains(100));
}

}  // namespace unconfirmed_ends_test
}  // namespace gpureap::daemon
