// `gpureap daemon`: the JSON API, the landing page, read-only-ness and the bearer token.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json api_scenario(json processes) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"utilization_percent", 30},
             {"processes", processes}}}}};
}

json parse(const HttpResponse& r) {
  try {
    return json::parse(r.body);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON (" << e.what() << "): " << r.body;
    return nullptr;
  }
}

// A job on GPU 0 and a gone PID whose context its worker keeps.
struct World {
  FakeDevRoot dev;
  Ready ready;
  Child job{[this] {
    hold(dev.dev("nvidia0"));
    ready.signal();
  }};
  // The gone trainer led its group; its worker is in it.
  std::unique_ptr<GoneTrainer> ghost = gone_trainer(dev);
  pid_t gone = ghost->trainer;
  std::unique_ptr<FakeNvml> nvml;
  TempDir cfg;

  World() {
    ready.wait();
    nvml = std::make_unique<FakeNvml>(api_scenario(
        json::array({{{"pid", job.pid()}, {"used_bytes", 4 * GiB}, {"sm_util", 25}},
                     {{"pid", gone}, {"used_bytes", 8 * GiB}, {"holders", {ghost->worker}}}})));
  }
  std::string config(const std::string& text) {
    std::ofstream(cfg.file("config.toml")) << text;
    return cfg.file("config.toml");
  }
};

TEST(DaemonApi, SnapshotIsThePsDocument) {
  REQUIRE_DOUBLE();
  World w;
  DaemonProcess d({"--config", w.config("interval = \"250ms\"\n"), "--dev-root", w.dev.path()},
                  w.nvml->env());
  auto r = d.get("/api/v1/snapshot");
  ASSERT_EQ(r.status, 200) << r.body << d.log();
  EXPECT_EQ(r.header("Content-Type"), "application/json; charset=utf-8");
  auto doc = parse(r);
  EXPECT_EQ(doc["schema"], "gpureap.snapshot/v1");
  EXPECT_EQ(doc["backend"]["available"], true);
  EXPECT_EQ(doc["gpus"][0]["uuid"], "GPU-0000");
  EXPECT_FALSE(row_of(doc, w.job.pid()).is_null()) << doc.dump(2);
  EXPECT_FALSE(row_of(doc, w.gone).is_null());
  EXPECT_FALSE(row_of(doc, w.ghost->worker).is_null());
  // The same document `gpureap ps --json` prints.
  auto ps = run_json({"ps", "--json", "--dev-root", w.dev.path()}, w.nvml->env());
  EXPECT_EQ(doc["processes"].size(), ps["processes"].size());
}

TEST(DaemonApi, FindingsAreTheDoctorDocument) {
  REQUIRE_DOUBLE();
  World w;
  DaemonProcess d({"--config", w.config("interval = \"250ms\"\n"), "--dev-root", w.dev.path()},
                  w.nvml->env());
  auto r = d.get("/api/v1/findings");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = parse(r);
  EXPECT_EQ(doc["schema"], "gpureap.doctor/v1");
  EXPECT_EQ(doc["snapshot"]["schema"], "gpureap.snapshot/v1");
  const json* ghost = nullptr;
  for (const auto& f : doc["findings"])
    if (f["code"] == "no-such-process") ghost = &f;
  ASSERT_NE(ghost, nullptr) << doc["findings"].dump(2);
  EXPECT_EQ((*ghost)["memory_bytes"], 8 * GiB);
  EXPECT_NE((*ghost)["pids"].dump().find(std::to_string(w.gone)), std::string::npos);
  EXPECT_FALSE((*ghost)["remedy"].empty());
}

TEST(DaemonApi, HistoryServesGpuAndProcessSeries) {
  REQUIRE_DOUBLE();
  World w;
  DaemonProcess d({"--config", w.config("interval = \"200ms\"\n"), "--dev-root", w.dev.path()},
                  w.nvml->env());
  ASSERT_TRUE(wait_until([&] {
    auto doc = parse(d.get("/api/v1/history?gpu=0&since=1m"));
    return doc.is_object() && doc["gpus"].size() == 1 && doc["gpus"][0]["samples"].size() >= 3;
  })) << d.get("/api/v1/history?gpu=0").body;
  auto doc = parse(d.get("/api/v1/history?gpu=0&since=1m"));
  EXPECT_EQ(doc["schema"], "gpureap.history/v1");
  EXPECT_EQ(doc["interval_seconds"], 0.2);
  EXPECT_EQ(doc["window_seconds"], 3600.0);
  const auto& sample = doc["gpus"][0]["samples"].back();
  EXPECT_EQ(sample["memory_used_bytes"], 12 * GiB);
  EXPECT_EQ(sample["memory_ghost_bytes"], 8 * GiB);
  EXPECT_EQ(sample["utilization_ratio"], 0.3);
  EXPECT_EQ(sample["processes"], 2);
  bool job = false;
  for (const auto& p : doc["processes"]) {
    if (p["pid"] != w.job.pid()) continue;
    job = true;
    EXPECT_EQ(p["gpu"], 0);
    ASSERT_FALSE(p["changes"].empty());
    EXPECT_EQ(p["changes"].back()["memory_bytes"], 4 * GiB);
    EXPECT_EQ(p["changes"].back()["sm_utilization_ratio"], 0.25);
    EXPECT_GE(p["last_seen"].get<double>(), p["first_seen"].get<double>());
  }
  EXPECT_TRUE(job) << doc.dump(2);
  // Every GPU without ?gpu; a time in the future gives no samples.
  EXPECT_EQ(parse(d.get("/api/v1/history"))["gpus"].size(), 1u);
  EXPECT_TRUE(parse(d.get("/api/v1/history?since=4102444800"))["gpus"][0]["samples"].empty());
  // Mistakes say what to write instead.
  auto bad_gpu = d.get("/api/v1/history?gpu=zero");
  EXPECT_EQ(bad_gpu.status, 400);
  EXPECT_NE(bad_gpu.body.find("GPU index"), std::string::npos) << bad_gpu.body;
  auto bad_since = d.get("/api/v1/history?since=yesterday");
  EXPECT_EQ(bad_since.status, 400);
  EXPECT_NE(bad_since.body.find("RFC 3339"), std::string::npos) << bad_since.body;
  // A GPU the node does not have is named, with the ones it has; not "no such page".
  auto no_gpu = d.get("/api/v1/history?gpu=7");
  EXPECT_EQ(no_gpu.status, 404);
  EXPECT_NE(no_gpu.body.find("no GPU 7: this node has GPU 0"), std::string::npos) << no_gpu.body;
  EXPECT_EQ(no_gpu.body.find("no such page"), std::string::npos) << no_gpu.body;
}

TEST(DaemonApi, LandingPageLinksEveryEndpoint) {
  REQUIRE_DOUBLE();
  World w;
  DaemonProcess d({"--config", w.config(""), "--dev-root", w.dev.path()}, w.nvml->env());
  auto r = d.get("/");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type"), "text/html; charset=utf-8");
  for (const char* link :
       {"metrics", "healthz", "api/v1/snapshot", "api/v1/findings", "api/v1/history"})
    EXPECT_NE(r.body.find(std::string("href=\"") + link), std::string::npos) << link;
  auto missing = d.get("/nothing-here");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("see /"), std::string::npos);
}

TEST(DaemonApi, ReadOnlyNoMethodButGetAndHead) {
  REQUIRE_DOUBLE();
  World w;
  DaemonProcess d({"--config", w.config(""), "--dev-root", w.dev.path()}, w.nvml->env());
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH"}) {
    for (const char* path : {"/metrics", "/api/v1/snapshot", "/kill", "/"}) {
      auto r = http_request(d.port(), method, path, {"Content-Length: 0"});
      EXPECT_EQ(r.status, 405) << method << " " << path;
      EXPECT_EQ(r.header("Allow"), "GET, HEAD");
    }
  }
  auto head = http_request(d.port(), "HEAD", "/metrics");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
  EXPECT_TRUE(is_alive(w.job.pid()));
  EXPECT_TRUE(is_alive(w.ghost->worker));
}

TEST(DaemonAuth, TokenGuardsEverythingButHealthz) {
  REQUIRE_DOUBLE();
  World w;
  std::string token_file = w.cfg.file("token");
  std::ofstream(token_file) << "s3cret-one\n";
  ::chmod(token_file.c_str(), 0600);
  auto config = w.config("auth_token_file = \"" + token_file + "\"\n");
  DaemonProcess d({"--config", config, "--dev-root", w.dev.path()}, w.nvml->env());
  ASSERT_GT(d.port(), 0) << d.log();
  EXPECT_NE(d.log().find("(bearer token required)"), std::string::npos) << d.log();
  const std::vector<std::string> guarded{
      "/", "/metrics", "/api/v1/snapshot", "/api/v1/findings", "/api/v1/history", "/nothing-here"};
  for (const auto& path : guarded) {
    auto none = d.get(path);
    EXPECT_EQ(none.status, 401) << path;
    EXPECT_EQ(none.header("WWW-Authenticate"), "Bearer realm=\"gpureap\"") << path;
    EXPECT_EQ(none.body.find("gpureap_up"), std::string::npos);
    EXPECT_EQ(d.get(path, {"Authorization: Bearer wrong"}).status, 401) << path;
    EXPECT_EQ(d.get(path, {"Authorization: Basic czNjcmV0LW9uZQ=="}).status, 401) << path;
  }
  EXPECT_TRUE(wait_until(
      [&] { return d.get("/metrics", {"Authorization: Bearer s3cret-one"}).status == 200; }));
  EXPECT_EQ(d.get("/api/v1/snapshot", {"Authorization: Bearer s3cret-one"}).status, 200);
  EXPECT_EQ(d.get("/healthz").status, 200);  // probes carry no token

  // A new token by SIGHUP: the old one stops working at once.
  std::ofstream(token_file) << "s3cret-two\n";
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_log("configuration reloaded")) << d.log();
  EXPECT_EQ(d.get("/metrics", {"Authorization: Bearer s3cret-one"}).status, 401);
  EXPECT_EQ(d.get("/metrics", {"Authorization: Bearer s3cret-two"}).status, 200);
}

}  // namespace
}  // namespace gpureap::testing
