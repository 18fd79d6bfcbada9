#include <gtest/gtest.h>

#include "engine/driver_view.h"

namespace gpureap::engine {
namespace {

constexpr uint64_t MiB = 1ull << 20;

core::DriverReading report(std::vector<std::pair<pid_t, uint64_t>> procs, uint64_t used) {
  core::BackendReport r;
  r.available = true;
  core::Gpu g;
  g.index = 0;
  g.memory.used_bytes = used;
  for (auto [pid, bytes] : procs) {
    core::DriverProcess d;
    d.pid = pid;
    d.used_bytes = bytes;
    g.processes.push_back(d);
  }
  r.gpus.push_back(g);
  return core::combine({r});
}

TEST(EngineDriverView, ListedPidsAndUnattributedMemory) {
  auto v = driver_view(report({{30, 100 * MiB}, {10, 50 * MiB}}, 200 * MiB));
  EXPECT_TRUE(v.available);
  EXPECT_EQ(v.listed, (std::vector<std::pair<unsigned, pid_t>>{{0, 10}, {0, 30}}));
  EXPECT_EQ(v.unattributed, (std::vector<std::pair<unsigned, uint64_t>>{{0, 50 * MiB}}));
}

TEST(EngineDriverView, APidThatAppearsOrGoesMovesTheView) {
  auto before = driver_view(report({{10, 100 * MiB}}, 100 * MiB));
  EXPECT_FALSE(driver_view_moved(before, driver_view(report({{10, 100 * MiB}}, 100 * MiB))));
  EXPECT_TRUE(
      driver_view_moved(before, driver_view(report({{10, 100 * MiB}, {11, 0}}, 100 * MiB))));
  EXPECT_TRUE(driver_view_moved(before, driver_view(report({}, 100 * MiB))));
}

TEST(EngineDriverView, UnattributedMemoryMovingMovesTheViewNoiseDoesNot) {
  auto before = driver_view(report({{10, 100 * MiB}}, 100 * MiB));
  // A listed process growing is not a move: the PIDs are the same and nothing is unattributed.
  EXPECT_FALSE(driver_view_moved(before, driver_view(report({{10, 900 * MiB}}, 900 * MiB))));
  EXPECT_FALSE(driver_view_moved(before, driver_view(report({{10, 100 * MiB}}, 110 * MiB))));
  EXPECT_TRUE(driver_view_moved(before, driver_view(report({{10, 100 * MiB}}, 2000 * MiB))));
}

TEST(EngineDriverView, DriverComingUpOrGoingDownMovesTheView) {
  auto up = driver_view(report({}, 0));
  core::DriverReading down = core::combine({core::BackendReport{}});
  EXPECT_TRUE(driver_view_moved(up, driver_view(down)));
  EXPECT_TRUE(driver_view_moved(driver_view(down), up));
}

}  // namespace
}  // namespace gpureap::engine
