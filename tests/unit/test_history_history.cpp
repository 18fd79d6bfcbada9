#include <gtest/gtest.h>

#include <set>

#include "history/history.h"
#include "snapshot_builders.h"

namespace gpureap::history {
namespace {

using namespace gpureap::testing;
using namespace std::chrono;

const auto kT0 = system_clock::time_point(seconds(1'700'000'000));

core::DriverProcess with_util(core::DriverProcess d, std::optional<unsigned> util) {
  d.sm_utilization_percent = util;
  return d;
}

// One GPU; process 200 (alive) uses `bytes` at `util` percent; sampled at t0 + `second`.
core::Snapshot at(int second, uint64_t bytes, std::optional<unsigned> util = std::nullopt,
                  std::vector<core::DriverProcess> more = {}) {
  std::vector<core::DriverProcess> procs{with_util(listed(200, bytes), util)};
  for (auto& m : more) procs.push_back(m);
  auto g = gpu(0, 0, bytes + 2 * GiB, procs);
  g.uuid = "GPU-0";
  g.utilization_percent = util;
  return make_snapshot({proc(1, 0, 1), holder(200, 1, 200)}, {g}, {.at = kT0 + seconds(second)});
}

// As at(), sampled at t0 + `ms` milliseconds.
core::Snapshot at_ms(int64_t ms, uint64_t bytes, std::optional<unsigned> util = std::nullopt) {
  auto g = gpu(0, 0, bytes + 2 * GiB, {with_util(listed(200, bytes), util)});
  g.uuid = "GPU-0";
  g.utilization_percent = util;
  return make_snapshot({proc(1, 0, 1), holder(200, 1, 200)}, {g}, {.at = kT0 + milliseconds(ms)});
}

HistoryLimits limits(seconds window, size_t max_processes = 1024, size_t budget = 131072) {
  HistoryLimits l;
  l.window = window;
  l.interval = seconds(1);
  l.max_processes = max_processes;
  l.max_process_points = budget;
  return l;
}

TEST(DaemonHistory, GpuSeriesHasOnePointPerSample) {
  History h(limits(hours(1)));
  for (int s = 0; s < 5; ++s) h.record(at(s, (1 + s) * GiB, 10u * s));
  auto v = h.query({0, kT0});
  ASSERT_EQ(v.gpus.size(), 1u);
  EXPECT_EQ(v.gpus[0].uuid, "GPU-0");
  ASSERT_EQ(v.gpus[0].points.size(), 5u);
  EXPECT_EQ(v.gpus[0].points[4].time, kT0 + seconds(4));
  EXPECT_EQ(v.gpus[0].points[4].used_bytes, 7 * GiB);
  EXPECT_EQ(v.gpus[0].points[4].unattributed_bytes, 2 * GiB);
  EXPECT_EQ(v.gpus[0].points[4].ghost_bytes, 0u);
  EXPECT_EQ(v.gpus[0].points[4].utilization_percent, 40u);
  EXPECT_EQ(v.gpus[0].points[4].processes, 1u);
  EXPECT_EQ(h.query({0, kT0 + seconds(3)}).gpus[0].points.size(), 2u);
  EXPECT_TRUE(h.query({7, kT0}).gpus.empty());
}

TEST(DaemonHistory, WindowBoundsTheGpuSeries) {
  History h(limits(seconds(10)));
  for (int s = 0; s < 100; ++s) h.record(at(s, GiB));
  auto v = h.query({0, kT0});
  // Points within the window only: 10 s back from the latest at 1 s apart.
  ASSERT_EQ(v.gpus[0].points.size(), 11u);
  EXPECT_EQ(v.gpus[0].points.front().time, kT0 + seconds(89));
}

TEST(DaemonHistory, SteadyProcessCostsOnePoint) {
  History h(limits(hours(1)));
  for (int s = 0; s < 50; ++s) h.record(at(s, 4 * GiB, 0));
  h.record(at(50, 6 * GiB, 0));
  auto v = h.query({0, kT0});
  ASSERT_EQ(v.processes.size(), 1u);
  const auto& t = v.processes[0];
  EXPECT_EQ(t.key.pid, 200);
  EXPECT_EQ(t.key.start_ticks, 1200u);
  EXPECT_EQ(t.comm, "p200");
  EXPECT_EQ(t.user, "root");
  EXPECT_EQ(t.first_seen, kT0);
  EXPECT_EQ(t.last_seen, kT0 + seconds(50));
  ASSERT_EQ(t.points.size(), 2u);
  EXPECT_EQ(t.points[0].used_bytes, 4 * GiB);
  EXPECT_EQ(t.points[1].time, kT0 + seconds(50));
  EXPECT_EQ(t.points[1].used_bytes, 6 * GiB);
  EXPECT_EQ(h.process_points(), 2u);
}

TEST(DaemonHistory, QuerySinceKeepsTheValueThatHeldThen) {
  History h(limits(hours(1)));
  for (int s = 0; s < 20; ++s) h.record(at(s, (s < 5 ? 1 : 3) * GiB));
  auto v = h.query({0, kT0 + seconds(10)});
  ASSERT_EQ(v.processes.size(), 1u);
  ASSERT_EQ(v.processes[0].points.size(), 1u);
  EXPECT_EQ(v.processes[0].points[0].time, kT0 + seconds(5));
  EXPECT_EQ(v.processes[0].points[0].used_bytes, 3 * GiB);
}

TEST(DaemonHistory, GonePidsAndNewPidsAreSeparateTracks) {
  History h(limits(hours(1)));
  h.record(at(0, GiB, std::nullopt, {listed(999, 8 * GiB)}));
  auto v = h.query({std::nullopt, kT0});
  ASSERT_EQ(v.processes.size(), 2u);
  EXPECT_EQ(v.processes[1].key.pid, 999);
  EXPECT_EQ(v.processes[1].key.start_ticks, 0u);  // gone: no start time
  EXPECT_EQ(v.processes[1].user, "unknown");
  EXPECT_EQ(v.gpus[0].points[0].ghost_bytes,
            8 * GiB);  // 999 is gone and nothing unlisted holds GPU 0
}

// A gone PID's track names the live processes that kept its context (here its process group's
// member 300, which holds the GPU file unlisted); a live process's track names none. The GPU's
// series carries its capacity.
TEST(DaemonHistory, GoneTracksNameTheirKeepersAndGpusTheirCapacity) {
  History h(limits(hours(1)));
  auto g = gpu(0, 0, 10 * GiB, {listed(200, GiB), listed(999, 8 * GiB)});
  h.record(
      make_snapshot({proc(1, 0, 1), holder(200, 1, 200), holder(300, 1, 999)}, {g}, {.at = kT0}));
  auto v = h.query({std::nullopt, kT0});
  ASSERT_EQ(v.gpus.size(), 1u);
  EXPECT_EQ(v.gpus[0].total_bytes, 100 * GiB);
  ASSERT_EQ(v.processes.size(), 2u);
  EXPECT_TRUE(v.processes[0].keepers.empty());
  ASSERT_EQ(v.processes[1].key.pid, 999);
  ASSERT_EQ(v.processes[1].keepers.size(), 1u);
  EXPECT_EQ(v.processes[1].keepers[0].pid, 300);
  EXPECT_EQ(v.processes[1].keepers[0].comm, "p300");
}

TEST(DaemonHistory, ProcessesUnseenForTheWindowAreDropped) {
  History h(limits(seconds(10)));
  h.record(at(0, GiB, std::nullopt, {listed(999, GiB)}));
  for (int s = 1; s < 30; ++s) h.record(at(s, GiB));
  auto v = h.query({0, kT0});
  ASSERT_EQ(v.processes.size(), 1u);
  EXPECT_EQ(v.processes[0].key.pid, 200);
  EXPECT_EQ(h.query({std::nullopt, kT0}).processes.size(), 1u);  // on no GPU either
}

TEST(DaemonHistory, TrackedProcessesAreBoundedLongestUnseenFirst) {
  History h(limits(hours(1), 3));
  for (int s = 0; s < 10; ++s) h.record(at(s, GiB, std::nullopt, {listed(1000 + s, GiB)}));
  auto v = h.query({std::nullopt, kT0});
  std::vector<pid_t> pids;
  for (const auto& t : v.processes) pids.push_back(t.key.pid);
  EXPECT_EQ(pids, (std::vector<pid_t>{200, 1008, 1009}));
}

TEST(DaemonHistory, ProcessPointsShareABudget) {
  // 4 busy processes, each changing every sample, with room for 64 points in all.
  History h(limits(hours(1), 1024, 64));
  for (int s = 0; s < 200; ++s)
    h.record(at(s, (1 + s % 2) * GiB, std::nullopt,
                {listed(301, (1 + s % 3) * GiB), listed(302, (1 + s % 5) * GiB),
                 listed(303, (1 + s % 7) * GiB)}));
  EXPECT_LE(h.process_points(), 64u);
  auto v = h.query({0, kT0});
  size_t sum = 0;
  for (const auto& t : v.processes) {
    sum += t.points.size();
    EXPECT_EQ(t.points.back().time, kT0 + seconds(199));  // the newest points are the ones kept
  }
  EXPECT_EQ(sum, h.process_points());
}

TEST(DaemonHistory, SmallerLimitsTrimAtOnce) {
  History h(limits(hours(1)));
  for (int s = 0; s < 100; ++s) h.record(at(s, (1 + s) * GiB));
  h.set_limits(limits(seconds(5)));
  auto v = h.query({0, kT0});
  EXPECT_EQ(v.gpus[0].points.size(), 6u);
  EXPECT_LE(v.processes[0].points.size(), 7u);
  EXPECT_EQ(h.limits().window, seconds(5));
}

TEST(DaemonHistory, BelowSinceIsTheStartOfTheCurrentIdleStretch) {
  History h(limits(hours(1)));
  const history::ProcessKey key{200, 1200};
  for (int s = 0; s < 10; ++s) h.record(at(s, GiB, 90));
  for (int s = 10; s < 20; ++s) h.record(at(s, GiB, s % 2 ? 1 : 3));
  auto since = h.below_since(key, 0, 5);
  ASSERT_TRUE(since);
  EXPECT_EQ(*since, kT0 + seconds(10));
  EXPECT_EQ(h.below_since(key, 0, 2), kT0 + seconds(19));  // 3 % at 18 s is not below 2 %
  EXPECT_FALSE(h.below_since(key, 0, 1));
  EXPECT_FALSE(h.below_since({200, 9999}, 0, 5));  // another process with the same PID
  EXPECT_FALSE(h.below_since(key, 1, 5));
  h.record(at(20, GiB, 80));
  EXPECT_FALSE(h.below_since(key, 0, 5));
}

TEST(DaemonHistory, UnknownUtilisationNeverProvesIdle) {
  History h(limits(hours(1)));
  for (int s = 0; s < 10; ++s) h.record(at(s, GiB, std::nullopt));
  EXPECT_FALSE(h.below_since({200, 1200}, 0, 50));
}

TEST(DaemonHistory, AGapInTheRecordBreaksAnIdleStretch) {
  History h(limits(hours(1)));
  const history::ProcessKey key{200, 1200};
  for (int s = 0; s < 5; ++s) h.record(at(s, GiB, 0));
  // The process was not seen for a minute (the driver was down): idle since its return only.
  for (int s = 65; s < 70; ++s) h.record(at(s, GiB, 0));
  EXPECT_EQ(h.below_since(key, 0, 5), kT0 + seconds(65));
  auto v = h.query({0, kT0});
  ASSERT_EQ(v.processes[0].points.size(), 3u);
  EXPECT_FALSE(v.processes[0].points[1].used_bytes);  // the gap: unknown
}

TEST(DaemonHistory, ProcessGoneFromTheLatestSampleIsNotIdle) {
  History h(limits(hours(1)));
  for (int s = 0; s < 5; ++s) h.record(at(s, GiB, 0, {with_util(listed(300, GiB), 0)}));
  EXPECT_TRUE(h.below_since({300, 0}, 0, 5));
  h.record(at(5, GiB, 0));
  EXPECT_FALSE(h.below_since({300, 0}, 0, 5));
}

// A storm of opens wakes the daemon ~150 times a second: every sample is recorded, yet the
// history keeps one point per interval and spans its whole window.
TEST(DaemonHistory, AStormOfSamplesKeepsOnePointPerIntervalAndTheWholeWindow) {
  History h(limits(seconds(60)));
  int64_t last = 0;
  for (int64_t ms = 0; ms <= 120'000; ms += 7) {
    // The process's memory and utilisation flicker with every sample, as a storm's would.
    bool odd = (ms / 7) % 2;
    h.record(at_ms(ms, (odd ? 2 : 1) * GiB, odd ? 40u : 0u));
    last = ms;
  }
  auto v = h.query({0, kT0});
  ASSERT_EQ(v.gpus.size(), 1u);
  const auto& points = v.gpus[0].points;
  // 60 s at 1 s: the window's slots (and the one the cutoff cuts), no more.
  EXPECT_LE(points.size(), 61u);
  EXPECT_GE(points.size(), 60u);
  auto latest = kT0 + milliseconds(last);
  EXPECT_EQ(points.back().time, latest);
  EXPECT_LE(points.front().time, latest - seconds(59));
  EXPECT_GE(points.front().time, latest - seconds(60));
  std::set<int64_t> slots;
  for (const auto& p : points)
    slots.insert(duration_cast<seconds>(p.time.time_since_epoch()).count());
  EXPECT_EQ(slots.size(), points.size()) << "two points in one interval";

  ASSERT_EQ(v.processes.size(), 1u);
  const auto& track = v.processes[0].points;
  EXPECT_LE(track.size(), 62u);
  EXPECT_LE(track.front().time, latest - seconds(59));
  EXPECT_EQ(h.process_points(), track.size());
  std::set<int64_t> track_slots;
  for (const auto& p : track)
    track_slots.insert(duration_cast<seconds>(p.time.time_since_epoch()).count());
  EXPECT_EQ(track_slots.size(), track.size()) << "two process points in one interval";
}

// Within an interval the slot's point holds the latest value; a change back to the value
// before it leaves no point.
TEST(DaemonHistory, ALaterSampleInTheIntervalUpdatesItsPoint) {
  History h(limits(hours(1)));
  h.record(at_ms(0, GiB, 10u));
  h.record(at_ms(1000, 2 * GiB, 10u));
  h.record(at_ms(1100, 3 * GiB, 10u));
  h.record(at_ms(1900, 3 * GiB, 20u));
  auto v = h.query({0, kT0});
  ASSERT_EQ(v.gpus[0].points.size(), 2u);
  EXPECT_EQ(v.gpus[0].points[1].time, kT0 + milliseconds(1900));
  EXPECT_EQ(v.gpus[0].points[1].used_bytes, 5 * GiB);
  EXPECT_EQ(v.gpus[0].points[1].utilization_percent, 20u);
  ASSERT_EQ(v.processes[0].points.size(), 2u);
  EXPECT_EQ(v.processes[0].points[1].time, kT0 + milliseconds(1000));
  EXPECT_EQ(v.processes[0].points[1].used_bytes, 3 * GiB);
  EXPECT_EQ(v.processes[0].points[1].sm_utilization_percent, 20u);
  h.record(at_ms(2000, 2 * GiB, 10u));
  h.record(at_ms(2500, 3 * GiB, 20u));  // back to the value before the slot's point: none
  EXPECT_EQ(h.query({0, kT0}).processes[0].points.size(), 2u);
  EXPECT_EQ(h.process_points(), 2u);
}

}  // namespace
}  // namespace gpureap::history
