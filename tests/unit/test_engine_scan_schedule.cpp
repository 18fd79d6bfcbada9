// The engine's schedule, with time passed in: what each collection reads.
#include <gtest/gtest.h>

#include "engine/scan_schedule.h"

namespace gpureap::engine {
namespace {

using namespace std::chrono_literals;

const Clock::time_point kT0{std::chrono::hours(1000)};

DriverView listing(std::vector<pid_t> pids) {
  DriverView v;
  v.available = true;
  for (pid_t p : pids) v.listed.emplace_back(0, p);
  return v;
}

// Runs one collection at t0 + `at` and says what it read.
ScanSchedule::Due collect_at(ScanSchedule& s, Clock::duration at, const DriverView& driver,
                             const Cadence& cadence) {
  auto due = s.due(kT0 + at, driver, cadence);
  s.done(kT0 + at, due, driver, cadence);
  return due;
}

TEST(EngineScanSchedule, FirstCollectionScansInFullThenHolderScansOnTheirInterval) {
  Cadence c{1s, 10s, 60s};
  ScanSchedule s;
  auto d = collect_at(s, 0s, listing({}), c);
  EXPECT_TRUE(d.scan);
  EXPECT_TRUE(d.full);
  EXPECT_FALSE(collect_at(s, 1s, listing({}), c).scan);
  EXPECT_FALSE(collect_at(s, 9s, listing({}), c).scan);
  d = collect_at(s, 10s, listing({}), c);
  EXPECT_TRUE(d.scan);
  EXPECT_FALSE(d.full);
  EXPECT_FALSE(collect_at(s, 11s, listing({}), c).scan);
  d = collect_at(s, 60s, listing({}), c);
  EXPECT_TRUE(d.scan);
  EXPECT_TRUE(d.full);  // every full_scan_interval, every fd table
  d = collect_at(s, 70s, listing({}), c);
  EXPECT_TRUE(d.scan);
  EXPECT_FALSE(d.full);
}

TEST(EngineScanSchedule, TheDriversViewMovingScansAtOnce) {
  Cadence c{1s, 1h, 1h};
  ScanSchedule s;
  collect_at(s, 0s, listing({}), c);
  EXPECT_FALSE(collect_at(s, 1s, listing({}), c).scan);
  auto d = collect_at(s, 2s, listing({42}), c);  // a PID appears
  EXPECT_TRUE(d.scan);
  EXPECT_FALSE(d.full);
  EXPECT_FALSE(collect_at(s, 3s, listing({42}), c).scan);  // compared with the last scan
  EXPECT_TRUE(collect_at(s, 4s, listing({}), c).scan);     // and goes
}

TEST(EngineScanSchedule, ZeroIntervalsScanInFullEveryTime) {
  Cadence c{500ms};  // the command-line views
  ScanSchedule s;
  for (auto at : {0ms, 500ms, 1000ms, 1001ms}) {
    auto d = collect_at(s, at, listing({}), c);
    EXPECT_TRUE(d.scan && d.full);
    EXPECT_FALSE(d.ipc_residue);  // only when asked for
  }
}

TEST(EngineScanSchedule, IpcResidueOnFullScansAtMostEveryFiveMinutes) {
  Cadence c{1s, 10s, 60s, 5s, true};
  ScanSchedule s;
  EXPECT_TRUE(collect_at(s, 0s, listing({}), c).ipc_residue);
  EXPECT_FALSE(collect_at(s, 60s, listing({}), c).ipc_residue);   // a full scan, but too soon
  EXPECT_FALSE(collect_at(s, 295s, listing({}), c).ipc_residue);  // likewise
  auto d = collect_at(s, 305s, listing({}), c);
  EXPECT_TRUE(d.scan && !d.full);
  EXPECT_FALSE(d.ipc_residue);  // due, but not on a full scan
  EXPECT_TRUE(collect_at(s, 355s, listing({}), c).ipc_residue);
}

TEST(EngineScanSchedule, TheNextCollectionIsAnIntervalAfterTheStartNeverBackToBack) {
  EXPECT_EQ(next_collection(kT0, kT0 + 100ms, 1s), kT0 + 1s);
  EXPECT_EQ(next_collection(kT0, kT0 + 3s, 1s), kT0 + 3500ms);  // it overran: half a rest
  EXPECT_EQ(next_collection(kT0, kT0 + 10ms, 0ms), kT0 + 10ms);
}

}  // namespace
}  // namespace gpureap::engine
