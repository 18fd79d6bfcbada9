// A MIG GPU split into two instances, with a ghost on one: a trainer on GPU instance 3 is gone
// and its forked worker keeps its context; a job runs on GPU instance 5. Every view names the
// instances, and `--gpu N/G` narrows kill's plan to exactly one of them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "mig_scene.h"
#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

std::string mig_config(const TempDir& dir, const std::string& text) {
  std::string path = dir.file("gpureap.toml");
  std::ofstream(path) << text;
  return path;
}

struct MigScene {
  FakeDevRoot dev;
  std::unique_ptr<GoneTrainer> ghost = gone_trainer(dev, "nvidia0");
  Child job = holding(dev, "nvidia0");

  json scenario() const { return mig_scenario(*ghost, job.pid()); }
};

TEST(Mig, PsShowsTheInstancesUnderTheGpuAndEachProcessOnItsOwn) {
  REQUIRE_DOUBLE();
  MigScene s;
  FakeNvml nvml(s.scenario());
  auto text = run_gpureap({"ps", "--no-color", "--dev-root", s.dev.path()}, nvml.env());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("0/3  MIG 3g.40gb (GI 3, CI 0)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("0/5  MIG 1g.10gb (GI 5, CI 0)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("8.0 GiB/40 GiB"), std::string::npos) << text.out;

  auto r = run_gpureap({"ps", "--json", "--dev-root", s.dev.path()}, nvml.env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = parse_output(r);
  const auto& instances = doc["gpus"][0]["instances"];
  ASSERT_EQ(instances.size(), 2u) << doc["gpus"][0].dump();
  EXPECT_EQ(instances[0]["instance"], "0/3");
  EXPECT_EQ(instances[0]["uuid"], kMigUuid3);
  EXPECT_EQ(instances[0]["memory"]["used_bytes"], 8 * GiB);
  EXPECT_EQ(instances[1]["instance"], "0/5");
  auto gone = entry_of(doc["processes"], s.ghost->trainer);
  ASSERT_FALSE(gone.is_null());
  EXPECT_EQ(gone["gpus"][0]["instance"], "0/3");
  EXPECT_EQ(gone["gpus"][0]["gpu_instance_id"], 3);
  EXPECT_EQ(entry_of(doc["processes"], s.job.pid())["gpus"][0]["instance"], "0/5");
}

TEST(Mig, DoctorNamesTheGhostsInstance) {
  REQUIRE_DOUBLE();
  MigScene s;
  FakeNvml nvml(s.scenario());
  auto r = run_gpureap({"doctor", "--no-color", "--settle", "0s", "--dev-root", s.dev.path()},
                       nvml.env());
  EXPECT_NE(r.out.find("GPU 0/3: 8.0 GiB held by gone PID " + std::to_string(s.ghost->trainer)),
            std::string::npos)
      << r.out << r.err;
  EXPECT_NE(r.out.find("is MIG 3g.40gb (GI 3, CI 0) of GPU 0"), std::string::npos) << r.out;
}

TEST(Mig, GpuInstanceNarrowsKillsPlanExactly) {
  REQUIRE_DOUBLE();
  MigScene s;
  FakeNvml nvml(s.scenario());
  auto plan = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"kill", "--json", "--dry-run", "--dev-root", s.dev.path()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_gpureap(args, nvml.env());
  };
  struct Case {
    std::vector<std::string> args;
    std::vector<pid_t> targets;
    std::string selection;
  };
  std::vector<Case> cases{
      {{"--ghosts", "--gpu", "0/3"}, {s.ghost->worker}, "ghosts on GPU 0/3"},
      // A MIG device's UUID names its compute instance: GI 3's only one, CI 0.
      {{"--ghosts", "--gpu", kMigUuid3}, {s.ghost->worker}, "ghosts on GPU 0/3/0"},
      {{"--ghosts", "--gpu", "0/3/0"}, {s.ghost->worker}, "ghosts on GPU 0/3/0"},
      {{"--ghosts", "--gpu", "0/5"}, {}, "ghosts on GPU 0/5"},
      {{"--gpu", "0/5"}, {s.job.pid()}, "holders of GPU 0/5"},
      {{std::to_string(s.job.pid()), "--gpu", "0/3"},
       {},
       "PID " + std::to_string(s.job.pid()) + " on GPU 0/3"},
  };
  for (const auto& c : cases) {
    std::string what;
    for (const auto& a : c.args) what += a + " ";
    auto r = plan(c.args);
    EXPECT_EQ(r.exit_code, c.targets.empty() ? 3 : 0) << what << r.err;
    auto doc = parse_output(r);
    EXPECT_EQ(planned_pids(doc), c.targets) << what << r.out;
    EXPECT_EQ(doc["plan"]["selection"], c.selection) << what;
  }
  auto unknown = plan({"--ghosts", "--gpu", "0/4"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("GPU 0 has no GPU instance 4 (its instances: 3, 5"), std::string::npos)
      << unknown.err;
  EXPECT_TRUE(is_alive(s.ghost->worker));
  EXPECT_TRUE(is_alive(s.job.pid()));
}

TEST(Mig, MetricsCarryTheInstance) {
  REQUIRE_DOUBLE();
  MigScene s;
  FakeNvml nvml(s.scenario());
  TempDir cfg;
  auto config = mig_config(cfg, "interval = \"250ms\"\nper_process_metrics = true\n");
  DaemonProcess d({"--config", config, "--dev-root", s.dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_up ").has_value(); })) << d.log();
  auto body = d.get("/metrics").body;
  EXPECT_NE(body.find("gpureap_gpu_instance_memory_total_bytes{gpu=\"0\",uuid=\"GPU-0000\","
                      "pci_bus_id=\"00000000:17:00.0\",vendor=\"nvidia\",gpu_instance=\"3\"} "),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("gpu_instance=\"5\""), std::string::npos) << body;
  const std::string ghost_pid = "pid=\"" + std::to_string(s.ghost->trainer) + "\"";
  bool ghost_series = false;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("gpureap_problem_process_memory_bytes{", 0) == 0 &&
        line.find(ghost_pid) != std::string::npos) {
      ghost_series = true;
      EXPECT_NE(line.find("gpu_instance=\"3\""), std::string::npos) << line;
    }
  EXPECT_TRUE(ghost_series) << body;
}

}  // namespace
}  // namespace gpureap::testing
