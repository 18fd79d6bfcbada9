// `gpureap daemon`: /metrics against real processes and the NVML test double.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json gpu0(json processes) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"pci_bus_id", "00000000:17:00.0"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"reserved_bytes", GiB / 2},
             {"driver_held_bytes", GiB},
             {"utilization_percent", 42},
             {"temperature_celsius", 61},
             {"power_mw", 512000},
             {"processes", processes}}}}};
}

std::string write_metrics_config(const TempDir& dir, const std::string& text) {
  std::ofstream(dir.file("config.toml")) << text;
  return dir.file("config.toml");
}

std::string gpu_series(const std::string& metric) {
  return metric + "{gpu=\"0\",uuid=\"GPU-0000\",pci_bus_id=\"00000000:17:00.0\",vendor=\"nvidia\"";
}

TEST(DaemonMetrics, ValuesMatchTheScenarioAndChangeWhenAHolderDies) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  // A trainer that is gone; its forked worker (its group) still holds the device file, so the
  // driver keeps listing the trainer's 8 GiB.
  auto ghost = gone_trainer(dev, "nvidia0");
  const pid_t trainer = ghost->trainer;
  FakeNvml nvml(gpu0(
      json::array({{{"pid", job.pid()}, {"used_bytes", 4 * GiB}},
                   {{"pid", trainer}, {"used_bytes", 8 * GiB}, {"holders", {ghost->worker}}}})));
  TempDir cfg;
  // The periodic holder scan is an hour away: the changes below must be seen because the
  // driver's list moved.
  auto config = write_metrics_config(cfg, "interval = \"250ms\"\nholder_scan_interval = \"1h\"\n");
  DaemonProcess d({"--config", config, "--dev-root", dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_up ").has_value(); })) << d.log();

  EXPECT_EQ(d.metric("gpureap_up "), 1);
  EXPECT_EQ(d.metric("gpureap_backend_up{backend=\"nvml\",vendor=\"nvidia\"}"), 1);
  auto r = d.get("/metrics");
  EXPECT_EQ(r.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r.body.find("gpureap_gpu_info{gpu=\"0\",uuid=\"GPU-0000\","
                        "pci_bus_id=\"00000000:17:00.0\",vendor=\"nvidia\",name=\"NVIDIA H200\","
                        "driver_version=\"550.54.15\",backend=\"nvml\",key=\"nvidia:GPU-0000\"} "
                        "1\n"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_memory_total_bytes")), 80.0 * GiB);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_memory_used_bytes")), 13.0 * GiB);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_memory_reserved_bytes")), 0.5 * GiB);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_memory_unattributed_bytes")), 1.0 * GiB);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_memory_ghost_bytes")), 8.0 * GiB);
  EXPECT_DOUBLE_EQ(d.metric(gpu_series("gpureap_gpu_utilization_ratio")).value_or(-1), 0.42);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_temperature_celsius")), 61);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_power_watts")), 512);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_processes") + ",anomaly=\"none\"}"), 1);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_processes") + ",anomaly=\"no-such-process\"}"), 1);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_processes") + ",anomaly=\"inherited-holder\"}"), 1);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_processes") + ",anomaly=\"leaked\"}"), 0);
  EXPECT_EQ(d.metric(gpu_series("gpureap_user_memory_bytes") + ",user=\"unknown\"}"), 8.0 * GiB);
  EXPECT_EQ(d.metric("gpureap_findings{code=\"no-such-process\""), 1);
  EXPECT_TRUE(d.metric("gpureap_collect_duration_seconds{collector=\"driver\"}").has_value());
  EXPECT_TRUE(d.metric("gpureap_collect_duration_seconds{collector=\"holder_scan\"}").has_value());
  EXPECT_EQ(d.metric("gpureap_collect_errors_total{collector=\"driver\"}"), 0);
  // Off by default: PIDs churn.
  EXPECT_EQ(r.body.find("gpureap_process_memory_bytes{"), std::string::npos);

  // The worker dies: nothing keeps the trainer's context, the driver releases it.
  ::kill(ghost->worker, SIGKILL);
  ASSERT_TRUE(wait_gone(ghost->worker));
  EXPECT_TRUE(wait_until([&] {
    return d.metric(gpu_series("gpureap_gpu_memory_ghost_bytes")) == 0;
  })) << d.get("/metrics").body;
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_memory_used_bytes")), 5.0 * GiB);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_processes") + ",anomaly=\"no-such-process\"}"), 0);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_processes") + ",anomaly=\"inherited-holder\"}"), 0);
  EXPECT_EQ(d.metric(gpu_series("gpureap_gpu_processes") + ",anomaly=\"none\"}"), 1);
  EXPECT_FALSE(d.metric("gpureap_findings{code=\"no-such-process\"").has_value());

  // And the healthy job's end takes its memory and its row. The two may leave in different
  // samples: a driver read just before the reap still lists the job that /proc read after it
  // no longer has.
  job.kill_and_reap();
  EXPECT_TRUE(wait_until(
      [&] { return d.metric(gpu_series("gpureap_gpu_processes") + ",anomaly=\"none\"}") == 0; }));
  EXPECT_TRUE(wait_until([&] {
    return d.metric(gpu_series("gpureap_gpu_memory_used_bytes")) == 1.0 * GiB;
  })) << d.get("/metrics").body;
}

// The /metrics page of a daemon with per-process series while a job that named itself `name`
// (a process may call itself anything) holds GPU 0's 2 GiB; `pid`: the job's. Empty, with a
// failure, where no per-process series came.
std::string metrics_with_job_named(const char* name, pid_t& pid) {
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0", [&] { ::prctl(PR_SET_NAME, name, 0, 0, 0); });
  pid = job.pid();
  FakeNvml nvml(gpu0(json::array({{{"pid", job.pid()}, {"used_bytes", 2 * GiB}}})));
  TempDir cfg;
  auto config = write_metrics_config(cfg, "interval = \"250ms\"\nper_process_metrics = true\n");
  DaemonProcess d({"--config", config, "--dev-root", dev.path()}, nvml.env());
  if (!wait_until([&] { return d.metric("gpureap_process_memory_bytes{").has_value(); })) {
    ADD_FAILURE() << d.log();
    return "";
  }
  return d.get("/metrics").body;
}

TEST(DaemonMetrics, PerProcessSeriesEscapeHostileProcessNames) {
  REQUIRE_DOUBLE();
  pid_t pid = 0;
  // Quotes, a backslash and a newline.
  const std::string body = metrics_with_job_named("a\"b\\c\nd", pid);
  if (body.empty()) return;
  EXPECT_NE(body.find("gpureap_process_memory_bytes{gpu=\"0\",uuid=\"GPU-0000\",pci_bus_id="
                      "\"00000000:17:00.0\",vendor=\"nvidia\",pid=\"" +
                      std::to_string(pid) + "\",user=\""),
            std::string::npos)
      << body;
  EXPECT_NE(
      body.find(
          R"(comm="a\"b\\c\nd",container="",container_name="",pod_name="",pod_namespace="",pod_uid=""} 2147483648)"),
      std::string::npos)
      << body;
  // Every sample line still follows the format: the name could not break out of its label.
  static const std::regex line_re(
      R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*")*\})? [-+0-9.eEInfNa]+$)");
  std::istringstream in(body);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    ++samples;
    EXPECT_TRUE(std::regex_match(line, line_re)) << line;
  }
  EXPECT_GT(samples, 10);
}

// A name whose bytes only look like UTF-8 (a surrogate, a code point above U+10FFFF): Prometheus
// refuses a whole scrape for one label value that is not UTF-8, so the node's every series would
// be lost. The label shows the bytes replaced, and the page is UTF-8.
TEST(DaemonMetrics, AProcessNameThatIsNotUtf8LeavesTheScrapeUtf8) {
  REQUIRE_DOUBLE();
  pid_t pid = 0;
  const std::string body = metrics_with_job_named("s\xED\xA0\x80t\xF4\x90\x80\x80u", pid);
  if (body.empty()) return;
  EXPECT_TRUE(strictly_utf8(body)) << body;
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_NE(body.find("comm=\"s" + fffd + fffd + fffd + "t" + fffd + fffd + fffd + fffd + "u\""),
            std::string::npos)
      << body;
}

}  // namespace
}  // namespace gpureap::testing
