// `gpureap daemon` alerting: firing and resolved alerts reach a webhook receiver and an exec
// sink started by the test on loopback, in Alertmanager's shape; a sink that is down is retried
// and counted while sampling goes on.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

// One GPU of 80 GiB with `used` in use (held by the driver, no process listed).
json alert_scenario(uint64_t used) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"driver_held_bytes", used},
             {"processes", json::array()}}}}};
}

// An Alertmanager-style webhook receiver on 127.0.0.1 that records every payload.
class AlertReceiver {
 public:
  AlertReceiver() {
    server_.set_socket_options([](int fd) {
      int yes = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // the daemon the test starts must not hold it
    });
    server_.Post("/alerts", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(m_);
      content_types_.push_back(req.get_header_value("Content-Type"));
      payloads_.push_back(json::parse(req.body, nullptr, false));
      res.status = 200;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~AlertReceiver() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<json> payloads() {
    std::lock_guard lock(m_);
    return payloads_;
  }
  std::vector<std::string> content_types() {
    std::lock_guard lock(m_);
    return content_types_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex m_;
  std::vector<json> payloads_;
  std::vector<std::string> content_types_;
};

std::vector<std::string> keys(const json& j) {
  std::vector<std::string> out;
  for (const auto& [k, v] : j.items()) out.push_back(k);
  std::sort(out.begin(), out.end());
  return out;
}

// The documented shape: every key, the values that do not depend on time.
void expect_shape(const json& p, const std::string& receiver, const std::string& status) {
  ASSERT_TRUE(p.is_object()) << p;
  EXPECT_EQ(keys(p), (std::vector<std::string>{"alerts", "commonAnnotations", "commonLabels",
                                               "externalURL", "groupKey", "groupLabels", "receiver",
                                               "status", "truncatedAlerts", "version"}));
  EXPECT_EQ(p["version"], "4");
  EXPECT_EQ(p["receiver"], receiver);
  EXPECT_EQ(p["status"], status);
  EXPECT_EQ(p["groupKey"], "{}:{alertname=\"GpuMemoryHigh\"}");
  EXPECT_EQ(p["groupLabels"], json({{"alertname", "GpuMemoryHigh"}}));
  EXPECT_EQ(p["externalURL"].get<std::string>().rfind("http://127.0.0.1:", 0), 0u) << p;
  ASSERT_EQ(p["alerts"].size(), 1u) << p;
  const json& a = p["alerts"][0];
  EXPECT_EQ(keys(a), (std::vector<std::string>{"annotations", "endsAt", "fingerprint",
                                               "generatorURL", "labels", "startsAt", "status"}));
  EXPECT_EQ(a["status"], status);
  EXPECT_EQ(a["labels"], json({{"alertname", "GpuMemoryHigh"},
                               {"severity", "critical"},
                               {"instance", host_name()},
                               {"gpu", "0"},
                               {"gpu_uuid", "GPU-0000"}}));
  EXPECT_EQ(p["commonLabels"], a["labels"]);
  EXPECT_EQ(a["fingerprint"].get<std::string>().size(), 16u);
  EXPECT_EQ(a["startsAt"].get<std::string>().size(), 24u) << a;  // 2026-05-01T12:00:00.123Z
  if (status == "firing")
    EXPECT_EQ(a["endsAt"], "0001-01-01T00:00:00Z");
  else
    EXPECT_GE(a["endsAt"].get<std::string>(), a["startsAt"].get<std::string>());
  EXPECT_NE(a["generatorURL"].get<std::string>().find("/api/v1/history?gpu=0"), std::string::npos);
}

struct AlertScene {
  FakeDevRoot dev;
  FakeNvml nvml{alert_scenario(40 * GiB)};
  TempDir dir;

  std::string config(const std::string& text) {
    std::ofstream(dir.file("config.toml")) << "interval = \"200ms\"\n" << text;
    return dir.file("config.toml");
  }
  std::vector<std::string> args() {
    return {"--config", dir.file("config.toml"), "--dev-root", dev.path()};
  }
};

const char* kRule = R"(
[[alert]]
name = "GpuMemoryHigh"
condition = "memory_ratio"
above = 0.9
severity = "critical"
)";

TEST(DaemonAlerts, WebhookAndExecSinksGetFiringThenResolved) {
  REQUIRE_DOUBLE();
  AlertScene s;
  AlertReceiver hook;
  std::ofstream(s.dir.file("page.sh")) << "cat >> \"$1\"\necho >> \"$1\"\n";
  s.config(std::string(kRule) + R"(
[[sink]]
name = "hook"
type = "webhook"
url = "http://127.0.0.1:)" +
           std::to_string(hook.port()) + R"(/alerts"

[[sink]]
name = "pager"
type = "exec"
command = ["/bin/sh", ")" +
           s.dir.file("page.sh") + "\", \"" + s.dir.file("pages.jsonl") + R"("]
timeout = "5s"
)");
  DaemonProcess d(s.args(), s.nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(wait_until([&] {
    return d.metric("gpureap_alerts_firing{alertname=\"GpuMemoryHigh\"}") == 0;
  })) << d.get("/metrics").body
      << d.log();
  EXPECT_EQ(d.metric("gpureap_alerts_sent_total{sink=\"hook\",result=\"success\"}"), 0);
  EXPECT_TRUE(hook.payloads().empty());

  // 78 of 80 GiB: above 90%.
  replace_scenario(s.nvml, alert_scenario(78 * GiB));
  ASSERT_TRUE(wait_until([&] {
    return hook.payloads().size() >= 1 && read_json_lines(s.dir.file("pages.jsonl")).size() >= 1;
  })) << d.log();
  json fired = hook.payloads()[0];
  expect_shape(fired, "hook", "firing");
  EXPECT_EQ(fired["alerts"][0]["annotations"]["summary"],
            "GPU 0 memory 97.5% used (78 GiB of 80 GiB)");
  EXPECT_EQ(hook.content_types()[0], "application/json");
  json paged = read_json_lines(s.dir.file("pages.jsonl"))[0];
  expect_shape(paged, "pager", "firing");
  EXPECT_EQ(paged["alerts"][0]["fingerprint"], fired["alerts"][0]["fingerprint"]);
  EXPECT_TRUE(wait_until(
      [&] { return d.metric("gpureap_alerts_firing{alertname=\"GpuMemoryHigh\"}") == 1; }));

  // Back to half: resolved, once, to both.
  replace_scenario(s.nvml, alert_scenario(40 * GiB));
  ASSERT_TRUE(wait_until([&] {
    return hook.payloads().size() >= 2 && read_json_lines(s.dir.file("pages.jsonl")).size() >= 2;
  })) << d.log();
  json resolved = hook.payloads()[1];
  expect_shape(resolved, "hook", "resolved");
  EXPECT_EQ(resolved["alerts"][0]["fingerprint"], fired["alerts"][0]["fingerprint"]);
  EXPECT_EQ(resolved["alerts"][0]["startsAt"], fired["alerts"][0]["startsAt"]);
  EXPECT_EQ(resolved["alerts"][0]["annotations"]["summary"],
            "GPU 0 memory 50% used (40 GiB of 80 GiB)");
  expect_shape(read_json_lines(s.dir.file("pages.jsonl"))[1], "pager", "resolved");
  ASSERT_TRUE(wait_until([&] {
    return d.metric("gpureap_alerts_sent_total{sink=\"pager\",result=\"success\"}") == 2;
  })) << d.get("/metrics").body;
  EXPECT_EQ(d.metric("gpureap_alerts_sent_total{sink=\"hook\",result=\"success\"}"), 2);
  EXPECT_EQ(d.metric("gpureap_alerts_sent_total{sink=\"hook\",result=\"failure\"}"), 0);
  EXPECT_EQ(d.metric("gpureap_alerts_firing{alertname=\"GpuMemoryHigh\"}"), 0);
  // Nothing more while it stays below: three more samples (each one evaluates the rule) send
  // nothing.
  const auto resolved_at = d.metric("gpureap_sample_timestamp_seconds");
  ASSERT_TRUE(resolved_at) << d.get("/metrics").body;
  ASSERT_TRUE(wait_until([&] {
    auto latest = d.metric("gpureap_sample_timestamp_seconds");
    return latest && *latest >= *resolved_at + 3 * 0.2;  // the config's interval
  })) << d.log();
  EXPECT_EQ(hook.payloads().size(), 2u);
  EXPECT_EQ(read_json_lines(s.dir.file("pages.jsonl")).size(), 2u);
}

TEST(DaemonAlerts, ASinkThatIsDownIsRetriedAndCountedWhileSamplingGoesOn) {
  REQUIRE_DOUBLE();
  AlertScene s;
  // Nothing listens on `down`; `stuck` accepts connections and never answers.
  int down = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int stuck = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(down, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::getsockname(down, reinterpret_cast<sockaddr*>(&a), &len), 0);
  int down_port = ntohs(a.sin_port);
  ::close(down);
  a.sin_port = 0;
  ASSERT_EQ(::bind(stuck, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(stuck, 16), 0);
  ASSERT_EQ(::getsockname(stuck, reinterpret_cast<sockaddr*>(&a), &len), 0);
  int stuck_port = ntohs(a.sin_port);

  replace_scenario(s.nvml, alert_scenario(78 * GiB));
  s.config(std::string(kRule) + R"(
[[sink]]
name = "down"
type = "webhook"
url = "http://127.0.0.1:)" +
           std::to_string(down_port) + R"(/alerts"
timeout = "1s"
retries = 2
retry_backoff = "100ms"

[[sink]]
name = "stuck"
type = "slack"
url = "http://127.0.0.1:)" +
           std::to_string(stuck_port) + R"(/services/secret"
timeout = "5m"
retries = 0
)");
  DaemonProcess d(s.args(), s.nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(wait_until([&] {
    return d.metric("gpureap_alerts_sent_total{sink=\"down\",result=\"dropped\"}") == 1;
  })) << d.get("/metrics").body
      << d.log();
  EXPECT_EQ(d.metric("gpureap_alerts_sent_total{sink=\"down\",result=\"failure\"}"), 3);
  EXPECT_EQ(d.metric("gpureap_alerts_sent_total{sink=\"down\",result=\"success\"}"), 0);
  auto log = d.log();
  std::string refused =
      "cannot connect to 127.0.0.1:" + std::to_string(down_port) + " (refused or unreachable)";
  EXPECT_NE(
      log.find("<4>gpureap: alert sink \"down\" (webhook, POST http://127.0.0.1:" +
               std::to_string(down_port) +
               "): attempt 1 of 3 to send 1 firing alert of GpuMemoryHigh failed: " + refused),
      std::string::npos)
      << log;
  EXPECT_NE(log.find("retrying in 200ms"), std::string::npos) << log;  // the backoff doubled
  EXPECT_NE(log.find("<3>gpureap: alert sink \"down\" (webhook, POST http://127.0.0.1:" +
                     std::to_string(down_port) +
                     "): gave up on 1 firing alert of GpuMemoryHigh after 3 attempts"),
            std::string::npos)
      << log;
  // The webhook's secret path never reaches the log.
  EXPECT_EQ(log.find("/services/secret"), std::string::npos) << log;

  // The stuck sink is still inside its five-minute attempt, and samples go on regardless.
  replace_scenario(s.nvml, alert_scenario(79 * GiB));
  EXPECT_TRUE(wait_until([&] {
    return d.metric(
               "gpureap_gpu_memory_used_bytes{gpu=\"0\",uuid=\"GPU-0000\",pci_bus_id=\"00000000:17:"
               "00.0\",vendor=\"nvidia\"}") == 79.0 * GiB;
  })) << d.log();
  EXPECT_EQ(d.metric("gpureap_alerts_sent_total{sink=\"stuck\",result=\"success\"}"), 0);
  EXPECT_EQ(d.metric("gpureap_alerts_firing{alertname=\"GpuMemoryHigh\"}"), 1);

  // And the daemon stops promptly although a sink hangs.
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(15000), 0) << d.log();
  ::close(stuck);
}

TEST(DaemonAlerts, AReloadThatRemovesARuleResolvesItsAlerts) {
  REQUIRE_DOUBLE();
  AlertScene s;
  AlertReceiver hook;
  replace_scenario(s.nvml, alert_scenario(78 * GiB));
  std::string sink = R"(
[[sink]]
name = "hook"
type = "webhook"
url = "http://127.0.0.1:)" +
                     std::to_string(hook.port()) + R"(/alerts"
)";
  s.config(std::string(kRule) + sink);
  DaemonProcess d(s.args(), s.nvml.env());
  ASSERT_TRUE(wait_until([&] { return hook.payloads().size() == 1; })) << d.log();
  EXPECT_EQ(hook.payloads()[0]["status"], "firing");

  s.config(sink);
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_log("configuration reloaded")) << d.log();
  ASSERT_TRUE(wait_until([&] { return hook.payloads().size() == 2; })) << d.log();
  expect_shape(hook.payloads()[1], "hook", "resolved");
  // The next sample's metrics no longer have the rule.
  EXPECT_TRUE(wait_until([&] { return !d.metric("gpureap_alerts_firing{").has_value(); }))
      << d.get("/metrics").body;
  EXPECT_TRUE(d.metric("gpureap_alerts_sent_total{sink=\"hook\",result=\"success\"}").has_value());
}

}  // namespace
}  // namespace gpureap::testing
