// `gpureap daemon` with a wedged driver: the NVML double blocks forever in a call.
#include <gtest/gtest.h>

#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

TEST(DaemonWatchdog, AWedgedDriverIsUpZeroWhileEndpointsAnswerAndItRecovers) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  json world = {{"gpus",
                 {{{"uuid", "GPU-0000"},
                   {"minor", 0},
                   {"processes", {{{"pid", job.pid()}, {"used_bytes", 2 * GiB}}}}}}}};
  FakeNvml nvml(world);
  TempDir cfg;
  std::ofstream(cfg.file("config.toml")) << "interval = \"200ms\"\ndriver_timeout = \"500ms\"\n";
  DaemonProcess d({"--config", cfg.file("config.toml"), "--dev-root", dev.path()}, nvml.env());
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_up ") == 1; })) << d.log();

  // The driver wedges: every memory query from now on blocks forever.
  json wedged = world;
  wedged["block_call"] = "nvmlDeviceGetMemoryInfo";
  nvml.write(wedged);
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_up ") == 0; })) << d.log();
  // Everything still answers, from the sampler's latest sample.
  auto health = d.get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_NE(health.body.find("driver: down (the GPU driver did not answer within 500ms"),
            std::string::npos)
      << health.body;
  auto snapshot = d.get("/api/v1/snapshot");
  ASSERT_EQ(snapshot.status, 200);
  EXPECT_EQ(json::parse(snapshot.body)["backend"]["available"], false);
  EXPECT_EQ(d.get("/api/v1/findings").status, 200);
  EXPECT_GE(d.metric("gpureap_collect_errors_total{collector=\"driver\"}").value_or(0), 1);
  EXPECT_FALSE(d.metric("gpureap_gpu_memory_used_bytes{").has_value());  // unknown, not 0
  EXPECT_TRUE(
      d.wait_log("<3>gpureap: GPU backend down: the GPU driver did not answer within 500ms"))
      << d.log();
  // The process list still comes from /proc.
  EXPECT_FALSE(row_of(json::parse(snapshot.body), job.pid()).is_null());

  // The driver answers again: a fresh backend instance recovers (the stuck call stays stuck).
  nvml.write(world);
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_up ") == 1; }, 30000)) << d.log();
  EXPECT_EQ(d.metric("gpureap_gpu_memory_used_bytes{gpu=\"0\""), 2.0 * GiB);
  EXPECT_TRUE(d.wait_log("<5>gpureap: the GPU driver answers again")) << d.log();
  EXPECT_EQ(d.get("/healthz").body, "ok\ndriver: up\n");
}

TEST(DaemonWatchdog, ADriverWedgedFromTheStartStillLetsTheDaemonServe) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  FakeNvml nvml({{"block_call", "nvmlInit"}, {"gpus", {{{"uuid", "GPU-0000"}}}}});
  TempDir cfg;
  std::ofstream(cfg.file("config.toml")) << "interval = \"200ms\"\ndriver_timeout = \"300ms\"\n";
  DaemonProcess d({"--config", cfg.file("config.toml"), "--dev-root", dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  EXPECT_EQ(d.metric("gpureap_up "), 0);
  EXPECT_EQ(d.get("/healthz").status, 200);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0) << d.log();  // a stuck NVML thread does not hold up the exit
}

}  // namespace
}  // namespace gpureap::testing
