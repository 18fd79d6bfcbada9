// `gpureap ps` joining the NVML test double's lists with real processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json join_scenario(json gpu0_processes, json gpu1_processes = json::array()) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"pci_bus_id", "00000000:17:00.0"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"reserved_bytes", GiB / 2},
             {"utilization_percent", 87},
             {"memory_utilization_percent", 40},
             {"temperature_celsius", 61},
             {"power_mw", 512000},
             {"mig_mode", false},
             {"processes", gpu0_processes}},
            {{"name", "NVIDIA H200"},
             {"uuid", "GPU-1111"},
             {"pci_bus_id", "00000000:2A:00.0"},
             {"minor", 1},
             {"total_bytes", 80 * GiB},
             {"processes", gpu1_processes}}}}};
}

json ps(const FakeDevRoot& dev, const FakeNvml& nvml) {
  return run_json({"ps", "--json", "--dev-root", dev.path()}, nvml.env());
}

TEST(PsDriverJoin, HealthyJobHasNoAnomalies) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready;
  Child job([&] {
    hold(dev.dev("nvidiactl"));
    hold(dev.dev("nvidia0"));
    hold(dev.dev("nvidia1"));  // CUDA opens every visible GPU's file
    ready.signal();
  });
  ready.wait();
  FakeNvml nvml(join_scenario(json::array({{{"pid", job.pid()}, {"used_bytes", 4 * GiB}}})));
  auto snap = ps(dev, nvml);
  EXPECT_EQ(snap["backend"]["available"], true);
  EXPECT_EQ(snap["backend"]["driver_version"], "550.54.15");
  EXPECT_TRUE(snap["backend"]["library"].is_string());
  ASSERT_EQ(snap["gpus"].size(), 2u);
  const auto& g0 = snap["gpus"][0];
  EXPECT_EQ(g0["index"], 0);
  EXPECT_EQ(g0["uuid"], "GPU-0000");
  EXPECT_EQ(g0["name"], "NVIDIA H200");
  EXPECT_EQ(g0["minor"], 0);
  EXPECT_EQ(g0["pci_bus_id"], "00000000:17:00.0");
  EXPECT_EQ(g0["memory"]["total_bytes"], 80 * GiB);
  EXPECT_EQ(g0["memory"]["used_bytes"], 4 * GiB);
  EXPECT_EQ(g0["memory"]["reserved_bytes"], GiB / 2);
  EXPECT_EQ(g0["memory"]["attributed_bytes"], 4 * GiB);
  EXPECT_EQ(g0["memory"]["unattributed_bytes"], 0);
  EXPECT_EQ(g0["utilization_percent"], 87);
  EXPECT_EQ(g0["memory_utilization_percent"], 40);
  EXPECT_EQ(g0["temperature_celsius"], 61);
  EXPECT_EQ(g0["power_watts"], 512.0);
  EXPECT_EQ(g0["mig_mode"], false);
  EXPECT_TRUE(snap["gpus"][1]["temperature_celsius"].is_null());  // unknown, not 0
  ASSERT_EQ(snap["processes"].size(), 1u);
  auto row = row_of(snap, job.pid());
  EXPECT_EQ(row["listed_by_driver"], true);
  EXPECT_EQ(row["gpus"], json::array({{{"index", 0},
                                       {"used_bytes", 4 * GiB},
                                       {"kind", "compute"},
                                       {"sm_utilization_percent", nullptr},
                                       {"regions", json::array()},
                                       {"shared_with", json::array()},
                                       {"gpu_instance_id", nullptr},
                                       {"compute_instance_id", nullptr},
                                       {"instance", nullptr},
                                       {"serves_clients", nullptr},
                                       {"clients", json::array()},
                                       {"server", nullptr}}}));
  EXPECT_EQ(row["anomalies"], json::array());
  for (const auto& w : snap["warnings"])  // the job holds its GPU's file: no cross-check warning
    EXPECT_EQ(w.get<std::string>().find("PID " + std::to_string(job.pid())), std::string::npos)
        << w;
}

TEST(PsDriverJoin, GhostParentKeptAliveByInheritedWorkers) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready;
  Child parent([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidiactl"));
    hold(dev.dev("nvidia0"));
    for (int i = 0; i < 2; ++i) {
      pid_t c = ::fork();
      if (c == 0) {
        ::prctl(PR_SET_NAME, "pt_data_worker");
        for (;;) ::pause();
      }
      ready.send(c);
    }
    ::_exit(0);
  });
  pid_t ghost = parent.pid();
  pid_t w1 = static_cast<pid_t>(ready.receive()), w2 = static_cast<pid_t>(ready.receive());
  parent.kill_and_reap();
  FakeNvml nvml(join_scenario(
      json::array({{{"pid", ghost}, {"used_bytes", 8 * GiB}, {"holders", {ghost, w1, w2}}}})));
  auto snap = ps(dev, nvml);
  auto row = row_of(snap, ghost);
  ASSERT_FALSE(row.is_null()) << snap.dump(2);
  EXPECT_EQ(row["in_proc"], false);
  EXPECT_EQ(row["listed_by_driver"], true);
  EXPECT_EQ(anomalies(row), std::vector<std::string>{"no-such-process"});
  EXPECT_EQ(row["gpus"][0]["used_bytes"], 8 * GiB);
  for (pid_t w : {w1, w2}) {
    auto wr = row_of(snap, w);
    ASSERT_FALSE(wr.is_null());
    EXPECT_EQ(wr["listed_by_driver"], false);
    EXPECT_EQ(anomalies(wr), (std::vector<std::string>{"orphan", "inherited-holder"}));
    EXPECT_EQ(wr["pgid"], ghost);
  }
  EXPECT_EQ(snap["gpus"][0]["memory"]["ghost_bytes"], 8 * GiB);
  auto text = run_gpureap({"ps", "--dev-root", dev.path()}, nvml.env());
  EXPECT_NE(text.out.find("8.0 GiB on GPU 0 is held by ghosts (2 processes keep it alive)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("`gpureap kill " + std::to_string(ghost) + "` frees it"),
            std::string::npos)
      << text.out;
  ::kill(w1, SIGKILL);
  ::kill(w2, SIGKILL);
}

TEST(PsDriverJoin, LeakedContextOfADeadPid) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  pid_t gone = dead_pid();
  Child listed = holding(dev, "nvidia0");
  FakeNvml nvml(
      join_scenario(json::array({{{"pid", gone}, {"used_bytes", 6 * GiB}, {"leaked", true}},
                                 {{"pid", listed.pid()}, {"used_bytes", GiB}}})));
  auto snap = ps(dev, nvml);
  EXPECT_EQ(anomalies(row_of(snap, gone)), (std::vector<std::string>{"no-such-process", "leaked"}));
  EXPECT_EQ(anomalies(row_of(snap, listed.pid())), std::vector<std::string>{});
}

TEST(PsDriverJoin, ForeignNamespaceFromInsideAPidNamespace) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for unshare --pid";
  FakeDevRoot dev;
  Child host_job = holding(dev, "nvidia0");
  FakeNvml nvml(join_scenario(
      json::array({{{"pid", host_job.pid()}, {"used_bytes", 2 * GiB}, {"leaked", true}}})));
  auto env = nvml.env();
  std::string cmd;
  for (const auto& e : env) cmd += e + " ";
  cmd += std::string(GPUREAP_BINARY) + " ps --json --dev-root " + dev.path();
  FILE* p = ::popen(("unshare --pid --fork --mount-proc env " + cmd + " 2>/dev/null").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  if (rc != 0 || out.empty()) GTEST_SKIP() << "unshare --pid is not available here";
  auto snap = json::parse(out);
  EXPECT_EQ(snap["in_child_pid_namespace"], true);
  auto row = row_of(snap, host_job.pid());
  ASSERT_FALSE(row.is_null()) << out;
  EXPECT_EQ(anomalies(row), std::vector<std::string>{"foreign-namespace"});
}

TEST(PsDriverJoin, ThirtyTwoByteProcessRecords) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready;
  std::vector<Child> jobs;
  for (int i = 0; i < 3; ++i) {
    jobs.emplace_back([&] {
      hold(dev.dev("nvidia0"));
      ready.signal();
    });
    ready.wait();
  }
  json procs = json::array();
  for (int i = 0; i < 3; ++i)
    procs.push_back({{"pid", jobs[i].pid()}, {"used_bytes", (i + 1) * GiB}});
  auto scenario = join_scenario(procs);
  scenario["process_info_v3_stride"] = 32;
  FakeNvml nvml(scenario);
  auto snap = ps(dev, nvml);
  for (int i = 0; i < 3; ++i) {
    auto row = row_of(snap, jobs[i].pid());
    ASSERT_FALSE(row.is_null()) << snap.dump(2);
    EXPECT_EQ(row["gpus"][0]["used_bytes"], (i + 1) * GiB);
    EXPECT_EQ(anomalies(row), std::vector<std::string>{});
  }
  EXPECT_EQ(snap["processes"].size(), 3u);
  EXPECT_EQ(snap["gpus"][0]["memory"]["attributed_bytes"], 6 * GiB);
}

TEST(PsDriverJoin, NotAvailableMemoryIsNullNotHuge) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(
      join_scenario(json::array({{{"pid", job.pid()}, {"used_bytes", "not_available"}}})));
  auto snap = ps(dev, nvml);
  auto row = row_of(snap, job.pid());
  EXPECT_TRUE(row["gpus"][0]["used_bytes"].is_null());
  EXPECT_EQ(snap["gpus"][0]["memory"]["attributed_bytes"], 0);
  auto text = run_gpureap({"ps", "--dev-root", dev.path()}, nvml.env());
  EXPECT_NE(text.out.find("n/a"), std::string::npos) << text.out;
}

TEST(PsDriverJoin, InitErrorsAreExplainedAndHoldersStillShown) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  struct Case {
    const char* code;
    const char* expect;
  } cases[] = {{"driver_not_loaded", "modprobe"},
               {"lib_rm_version_mismatch", "reboot, or reload the nvidia modules"},
               {"no_permission", "permission"}};
  for (const auto& c : cases) {
    auto scenario = join_scenario(json::array());
    scenario["init_error"] = c.code;
    FakeNvml nvml(scenario);
    auto snap = ps(dev, nvml);
    EXPECT_EQ(snap["backend"]["available"], false) << c.code;
    EXPECT_NE(snap["backend"]["error"].get<std::string>().find(c.expect), std::string::npos)
        << c.code << ": " << snap["backend"]["error"];
    EXPECT_EQ(snap["gpus"], json::array());
    EXPECT_FALSE(row_of(snap, job.pid()).is_null());
  }
  auto r = run_gpureap(
      {"ps", "--dev-root", dev.path(), "--nvml-library", "/nonexistent/libnvidia-ml.so.1"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("could not be loaded"), std::string::npos) << r.out;
}

TEST(PsDriverJoin, OneLostGpuDoesNotHideTheOthers) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  auto scenario = join_scenario(json::array({{{"pid", job.pid()}, {"used_bytes", 3 * GiB}}}));
  scenario["gpus"][1]["error"] = "gpu_lost";
  FakeNvml nvml(scenario);
  auto snap = ps(dev, nvml);
  ASSERT_EQ(snap["gpus"].size(), 2u);
  EXPECT_TRUE(snap["gpus"][0]["error"].is_null());
  EXPECT_EQ(snap["gpus"][0]["memory"]["used_bytes"], 3 * GiB);
  EXPECT_TRUE(snap["gpus"][1]["error"].is_string());
  EXPECT_EQ(row_of(snap, job.pid())["gpus"][0]["used_bytes"], 3 * GiB);
}

}  // namespace
}  // namespace gpureap::testing
