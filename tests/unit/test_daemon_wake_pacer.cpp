// The holder tracker's pacing, on a clock the tests move: news (a new holder, a fork, lost
// events) wakes the engine at once, a storm's events wait for the next wake-up and cost no
// news its turn, and file events are read a gap apart only while a storm goes on.
#include <gtest/gtest.h>

#include "daemon/wake_pacer.h"

namespace gpureap::daemon {
namespace {

using Clock = WakePacer::Clock;
using std::chrono::milliseconds;

// Wakes the engine whenever the pacer says it is due, as the tracker's loop does.
bool wake_if_due(WakePacer& p, Clock::time_point now) {
  auto due = p.wake_due();
  if (!due || *due > now) return false;
  p.woke(now);
  return true;
}

const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1);

TEST(WakePacer, NothingReadAsksForNoWake) {
  WakePacer p;
  EXPECT_FALSE(p.wake_due());
  p.files_read({}, false, t0);
  EXPECT_FALSE(p.wake_due());
  EXPECT_LE(p.next_file_read(), t0);
}

TEST(WakePacer, ANewHoldersOpenIsReadAndWakesTheEngineAtOnce) {
  WakePacer p;
  p.files_read({42}, false, t0);
  ASSERT_TRUE(p.wake_due());
  EXPECT_LE(*p.wake_due(), t0);
  EXPECT_LE(p.next_file_read(), t0);  // no storm: the next event is read as it comes
  EXPECT_TRUE(wake_if_due(p, t0));
  EXPECT_FALSE(p.wake_due());
}

TEST(WakePacer, AStormsEventsWaitForTheHotGapAndAreReadAGapApart) {
  WakePacer p;
  p.files_read({7}, false, t0);
  ASSERT_TRUE(wake_if_due(p, t0));
  const auto t1 = t0 + milliseconds(5);
  p.files_read({7, 7}, false, t1);  // the same process again: storming
  ASSERT_TRUE(p.wake_due());
  EXPECT_EQ(*p.wake_due(), t0 + WakePacer::kHotWakeGap);
  EXPECT_EQ(p.next_file_read(), t1 + WakePacer::kFileReadGap);
  EXPECT_FALSE(wake_if_due(p, t1));
}

TEST(WakePacer, ANewHolderDuringAStormIsNotHeldBackByTheStorm) {
  WakePacer p;
  // A storm going on for a while, its events woken for once a hot gap.
  auto now = t0;
  int wakes = 0;
  for (int i = 0; i < 200; ++i, now += milliseconds(20)) {
    p.files_read({7}, false, now);
    wakes += wake_if_due(p, now);
  }
  EXPECT_LE(wakes, 200 * 20 / 1000 + 2) << "a storm costs about a collection a second";
  // A storm's wake-up just now, then a new holder's open in the same read as storm events.
  p.files_read({7}, false, now);
  p.woke(now);
  now += milliseconds(1);
  p.files_read({7, 4242, 7}, false, now);
  ASSERT_TRUE(p.wake_due());
  EXPECT_LE(*p.wake_due(), now);
  // The storm still sets the reading pace.
  EXPECT_EQ(p.next_file_read(), now + WakePacer::kFileReadGap);
}

TEST(WakePacer, ManyNewProcessesWakeABurstThenOnePerGap) {
  WakePacer p;
  auto now = t0;
  int wakes = 0;
  // 1000 processes, each opening once, a millisecond apart: one second.
  for (pid_t pid = 1000; pid < 2000; ++pid, now += milliseconds(1)) {
    p.files_read({pid}, false, now);
    EXPECT_LE(p.next_file_read(), now) << "each is news: read at once";
    wakes += wake_if_due(p, now);
  }
  const auto gaps = static_cast<int>(milliseconds(1000) / WakePacer::kMinWakeGap);
  EXPECT_LE(wakes, static_cast<int>(WakePacer::kWakeBurst) + gaps);
  EXPECT_GE(wakes, gaps);
  // Back to back at first: a job's ranks opening together are each seen at once.
  WakePacer fresh;
  for (pid_t pid = 1; pid <= static_cast<pid_t>(WakePacer::kWakeBurst); ++pid) {
    fresh.files_read({pid}, false, t0);
    EXPECT_TRUE(wake_if_due(fresh, t0)) << "rank " << pid;
  }
  fresh.files_read({99}, false, t0);
  EXPECT_FALSE(wake_if_due(fresh, t0)) << "past the burst";
  EXPECT_TRUE(wake_if_due(fresh, t0 + WakePacer::kMinWakeGap));
}

TEST(WakePacer, ForksExitsAndLostEventsAreNews) {
  WakePacer p;
  p.news();
  ASSERT_TRUE(p.wake_due());
  EXPECT_TRUE(wake_if_due(p, t0));
  // A storm's process, then the kernel's queue overflows: news, not the storm's pace.
  p.files_read({7}, false, t0);
  ASSERT_TRUE(wake_if_due(p, t0));
  const auto t1 = t0 + milliseconds(3);
  p.files_read({7}, true, t1);
  ASSERT_TRUE(p.wake_due());
  EXPECT_LE(*p.wake_due(), t1);
}

TEST(WakePacer, AProcessQuietForTheHotWindowIsNewsAgain) {
  WakePacer p;
  p.files_read({7}, false, t0);
  ASSERT_TRUE(wake_if_due(p, t0));
  const auto later = t0 + WakePacer::kHotWindow + milliseconds(1);
  p.files_read({7}, false, later);
  ASSERT_TRUE(p.wake_due());
  EXPECT_LE(*p.wake_due(), later);
  EXPECT_LE(p.next_file_read(), later);
}

}  // namespace
}  // namespace gpureap::daemon
