#include <gtest/gtest.h>

#include "policy/tracker.h"

namespace gpureap::policy {
namespace {

using namespace std::chrono_literals;

Evaluation matching(pid_t pid, uint64_t start = 1) {
  Evaluation e;
  e.pid = pid;
  e.start_ticks = start;
  e.checks = {{"user", Verdict::Pass, "user alice"}};
  return e;
}

Evaluation not_matching(pid_t pid, uint64_t start = 1) {
  auto e = matching(pid, start);
  e.checks[0].verdict = Verdict::Fail;
  return e;
}

Policy terminate_after(std::chrono::milliseconds after) {
  Policy p;
  p.name = "p";
  p.action = Action::Terminate;
  p.after = after;
  return p;
}

const TimePoint t0 = TimePoint(std::chrono::seconds(1'000'000));

TEST(PolicyTracker, ActsOnlyOnceTheMatchHasHeldForAfter) {
  Tracker t;
  t.configure({terminate_after(60s)}, true);
  EXPECT_TRUE(t.observe({{matching(10)}}, t0).empty());
  EXPECT_TRUE(t.observe({{matching(10)}}, t0 + 59s).empty());
  auto tasks = t.observe({{matching(10)}}, t0 + 60s);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_TRUE(tasks[0].act);
  EXPECT_EQ(tasks[0].attempt, 1u);
  EXPECT_EQ(tasks[0].identity.pid, 10);
}

TEST(PolicyTracker, ABlipRestartsTheClock) {
  Tracker t;
  t.configure({terminate_after(60s)}, true);
  t.observe({{matching(10)}}, t0);
  t.observe({{not_matching(10)}}, t0 + 30s);
  EXPECT_TRUE(t.observe({{matching(10)}}, t0 + 61s).empty());
  EXPECT_EQ(t.observe({{matching(10)}}, t0 + 121s).size(), 1u);
}

TEST(PolicyTracker, NeverActsTwiceOnTheSameIdentityButDoesOnANewOne) {
  Tracker t;
  t.configure({terminate_after(0s)}, true);
  ASSERT_EQ(t.observe({{matching(10)}}, t0).size(), 1u);
  EXPECT_EQ(t.finished("p", {10, 1}, false, t0), Tracker::After::Done);
  EXPECT_TRUE(t.observe({{matching(10)}}, t0 + 1s).empty());
  EXPECT_TRUE(t.observe({{matching(10)}}, t0 + 2h).empty());
  // The same PID, recycled: another process.
  EXPECT_EQ(t.observe({{matching(10, 999)}}, t0 + 2h).size(), 1u);
}

TEST(PolicyTracker, WithoutEnforcementItOnlyRecordsOnce) {
  Tracker t;
  t.configure({terminate_after(0s)}, false);
  auto tasks = t.observe({{matching(10)}}, t0);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_FALSE(tasks[0].act);
  EXPECT_TRUE(t.observe({{matching(10)}}, t0 + 1s).empty());
  // Turning enforcement on acts on what was only logged.
  t.configure({terminate_after(0s)}, true);
  tasks = t.observe({{matching(10)}}, t0 + 2s);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_TRUE(tasks[0].act);
}

TEST(PolicyTracker, AFailureIsRetriedWithBackoffThenGivenUp) {
  Tracker t;
  t.configure({terminate_after(0s)}, true);
  auto now = t0;
  ASSERT_EQ(t.observe({{matching(10)}}, now).size(), 1u);
  EXPECT_EQ(t.finished("p", {10, 1}, true, now), Tracker::After::RetryLater);
  EXPECT_TRUE(t.observe({{matching(10)}}, now + kFirstRetryAfter - 1s).empty());
  auto tasks = t.observe({{matching(10)}}, now + kFirstRetryAfter);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].attempt, 2u);
  now += kFirstRetryAfter;
  EXPECT_EQ(t.finished("p", {10, 1}, true, now), Tracker::After::RetryLater);
  EXPECT_TRUE(t.observe({{matching(10)}}, now + 2 * kFirstRetryAfter - 1s).empty());  // doubled
  tasks = t.observe({{matching(10)}}, now + 2 * kFirstRetryAfter);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].attempt, kMaxAttempts);
  EXPECT_EQ(t.finished("p", {10, 1}, true, now), Tracker::After::GaveUp);
  EXPECT_TRUE(t.observe({{matching(10)}}, now + 24h).empty());
}

TEST(PolicyTracker, NoRetryOnceTheMatchNoLongerHolds) {
  Tracker t;
  t.configure({terminate_after(0s)}, true);
  t.observe({{matching(10)}}, t0);
  t.finished("p", {10, 1}, true, t0);
  t.observe({{not_matching(10)}}, t0 + 1s);
  // It matches again later: a new match, timed from now, acted on as attempt 1.
  auto tasks = t.observe({{matching(10)}}, t0 + kFirstRetryAfter * 2);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].attempt, 1u);
}

TEST(PolicyTracker, APolicyRemovedOnReloadForgetsItsState) {
  Tracker t;
  t.configure({terminate_after(60s)}, true);
  t.observe({{matching(10)}}, t0);
  EXPECT_EQ(t.tracked(), 1u);
  auto other = terminate_after(60s);
  other.name = "other";
  t.configure({other}, true);
  EXPECT_EQ(t.tracked(), 0u);
}

// A reload that keeps a policy's name but changes what it matches starts its `after` clock
// again: the process matched the old conditions, not the new ones, all that time. A reload that
// changes only what it does (or after how long) keeps the clock.
TEST(PolicyTracker, AReloadThatChangesAPolicysConditionsRestartsItsClock) {
  Tracker t;
  auto p = terminate_after(60s);
  p.command = "python*";
  t.configure({p}, true);
  t.observe({{matching(10)}}, t0);
  auto narrower = p;
  narrower.min_memory = 1ull << 30;
  t.configure({narrower}, true);
  EXPECT_TRUE(t.observe({{matching(10)}}, t0 + 60s).empty());
  EXPECT_EQ(t.observe({{matching(10)}}, t0 + 120s).size(), 1u);

  Tracker kept;
  kept.configure({p}, true);
  kept.observe({{matching(10)}}, t0);
  auto kill = p;
  kill.action = Action::Kill;
  kill.after = 30s;
  kept.configure({kill}, true);
  EXPECT_EQ(kept.observe({{matching(10)}}, t0 + 30s).size(), 1u);
}

TEST(PolicyTracker, AProcessThatLeftTheSnapshotIsForgotten) {
  Tracker t;
  t.configure({terminate_after(0s)}, true);
  t.observe({{matching(10)}}, t0);
  t.finished("p", {10, 1}, false, t0);
  t.observe({{}}, t0 + 1s);
  EXPECT_EQ(t.tracked(), 0u);
}

TEST(PolicyTracker, AProcessThatOnlyStoppedBeingARowIsNotActedOnAgain) {
  Tracker t;
  t.configure({terminate_after(0s)}, false);
  ASSERT_EQ(t.observe({{matching(10)}}, t0).size(), 1u);
  auto alive = [](const Identity& id) { return id.pid == 10; };
  t.observe({{}}, t0 + 1s, alive);  // it closed its GPU files; it still runs
  EXPECT_EQ(t.tracked(), 1u);
  EXPECT_TRUE(t.observe({{matching(10)}}, t0 + 2s, alive).empty());
}

}  // namespace
}  // namespace gpureap::policy
