// Contexts kept alive by real processes, through the NVML double: forked holders, zombies,
// release delays persisted across runs, processes appearing between the two calls, and a
// world that changes under one long-lived backend (as in the daemon).
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "fake_nvml_fixture.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

class nvmlFakeHolders : public FakeNvmlFixture {
 protected:
  json read_state() {
    std::ifstream in(scenario_path_ + ".state");
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str());
  }
  void write_state(const json& state) { std::ofstream(scenario_path_ + ".state") << state.dump(); }
};

TEST_F(nvmlFakeHolders, ContextLivesWhileAnyHolderLives) {
  const pid_t parent = spawn_sleeper();
  const pid_t worker = spawn_sleeper();
  write_scenario(
      {{"gpus",
        {{{"driver_held_bytes", 100 * kMiB},
          {"processes",
           {{{"pid", parent}, {"used_bytes", 4 * kGiB}, {"holders", {parent, worker}}}}}}}}});

  core::Gpu gpu = collect().gpus.at(0);
  ASSERT_NE(find_process(gpu, parent), nullptr);
  EXPECT_EQ(gpu.memory.used_bytes, 4 * kGiB + 100 * kMiB);

  // The parent is gone (no such process), but its forked worker keeps the context.
  kill_and_reap(parent);
  gpu = collect().gpus.at(0);
  const core::DriverProcess* ghost = find_process(gpu, parent);
  ASSERT_NE(ghost, nullptr) << "a living holder keeps the dead parent's context listed";
  EXPECT_EQ(ghost->used_bytes, 4 * kGiB);
  EXPECT_EQ(gpu.memory.used_bytes, 4 * kGiB + 100 * kMiB);

  // A zombie holds no files: the last holder dying releases the context.
  kill_leaving_zombie(worker);
  gpu = collect().gpus.at(0);
  EXPECT_EQ(find_process(gpu, parent), nullptr);
  EXPECT_TRUE(gpu.processes.empty());
  EXPECT_EQ(gpu.memory.used_bytes, 100 * kMiB);
}

TEST_F(nvmlFakeHolders, DefaultHolderIsTheProcessItself) {
  const pid_t child = spawn_sleeper();
  write_scenario({{"gpus", {{{"processes", {{{"pid", child}, {"used_bytes", kGiB}}}}}}}});
  ASSERT_NE(find_process(collect().gpus.at(0), child), nullptr);
  kill_and_reap(child);
  EXPECT_EQ(find_process(collect().gpus.at(0), child), nullptr);
}

TEST_F(nvmlFakeHolders, LeakedContextOutlivesItsProcess) {
  const pid_t child = spawn_sleeper();
  write_scenario(
      {{"gpus", {{{"processes", {{{"pid", child}, {"used_bytes", kGiB}, {"leaked", true}}}}}}}});
  kill_and_reap(child);
  const core::Gpu gpu = collect().gpus.at(0);
  ASSERT_NE(find_process(gpu, child), nullptr);
  EXPECT_EQ(gpu.memory.used_bytes, kGiB);
}

// The delay runs from the first time a double saw every holder dead, and that moment
// survives across runs (each gpureap run loads a fresh double) in <scenario>.state.
TEST_F(nvmlFakeHolders, ReleaseDelayCountsFromTheFirstSightingOfDeath) {
  const pid_t child = spawn_sleeper();
  write_scenario({{"gpus",
                   {{{"processes",
                      {{{"pid", child}, {"used_bytes", kGiB}, {"release_delay_ms", 3600000}}}}}}}});
  ASSERT_NE(find_process(collect().gpus.at(0), child), nullptr);
  kill_and_reap(child);

  EXPECT_NE(find_process(collect().gpus.at(0), child), nullptr) << "teardown still running";
  json state = read_state();
  const std::string key = "0/" + std::to_string(child);
  ASSERT_TRUE(state["first_dead_ms"].contains(key)) << state.dump();
  const auto first_seen = state["first_dead_ms"][key].get<long long>();
  EXPECT_NE(find_process(collect().gpus.at(0), child), nullptr) << "a later run: still there";
  EXPECT_EQ(read_state()["first_dead_ms"][key].get<long long>(), first_seen)
      << "the first sighting is kept, not refreshed";

  // Move the sighting an hour into the past instead of waiting an hour.
  state["first_dead_ms"][key] = first_seen - 3600001;
  write_state(state);
  const core::Gpu gpu = collect().gpus.at(0);
  EXPECT_EQ(find_process(gpu, child), nullptr);
  EXPECT_EQ(gpu.memory.used_bytes, 0u);
}

TEST_F(nvmlFakeHolders, ProcessesStartingBetweenTheTwoCallsAreNotLost) {
  json processes = json::array();
  for (unsigned i = 0; i < 12; ++i) {
    processes.push_back({{"pid", 3000100 + i}, {"used_bytes", kGiB}, {"leaked", true}});
  }
  // The size query reports 2; by the read there are 12, more than the slack covers.
  write_scenario({{"size_query_undercount", 10}, {"gpus", {{{"processes", processes}}}}});
  const core::Gpu gpu = collect().gpus.at(0);
  EXPECT_FALSE(gpu.processes_error.has_value()) << *gpu.processes_error;
  ASSERT_EQ(gpu.processes.size(), 12u);
  EXPECT_EQ(gpu.processes[11].pid, 3000111);
}

TEST_F(nvmlFakeHolders, OneBackendFollowsAChangingWorld) {
  const pid_t self = getpid();
  write_scenario({{"gpus", {{{"processes", {{{"pid", self}, {"used_bytes", kGiB}}}}}}}});
  auto nvml = backend();
  core::BackendReport report = nvml->collect();
  ASSERT_EQ(report.gpus.at(0).processes.size(), 1u);

  const pid_t child = spawn_sleeper();
  write_scenario({{"gpus",
                   {{{"processes",
                      {{{"pid", self}, {"used_bytes", kGiB}},
                       {{"pid", child}, {"used_bytes", 2 * kGiB}}}}}}}});
  report = nvml->collect();
  ASSERT_EQ(report.gpus.at(0).processes.size(), 2u);
  EXPECT_EQ(report.gpus[0].memory.used_bytes, 3 * kGiB);

  write_scenario({{"gpus", {{{"error", "gpu_lost"}}}}});
  report = nvml->collect();
  ASSERT_TRUE(report.available);
  EXPECT_TRUE(contains(report.gpus.at(0).error, "fallen off the bus"));
}

}  // namespace
}  // namespace gpureap::testing
