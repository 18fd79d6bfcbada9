// The alertmanager sink against the real Alertmanager (Debian's prometheus-alertmanager) on
// loopback: a ghost the daemon sees becomes an alert `amtool alert query` shows with its
// labels, it resolves when the ghost is gone, and a silence made with `amtool silence add`
// keeps it from the receiver Alertmanager notifies. Skipped where Alertmanager is not
// installed (scripts/install-deps.sh installs it).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <thread>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

const char* kAlertmanager = "/usr/bin/prometheus-alertmanager";
const char* kAmtool = "/usr/bin/amtool";

// The receiver Alertmanager notifies (its webhook_configs): every notification it gets.
class ChainReceiver {
 public:
  ChainReceiver() {
    server_.set_socket_options([](int fd) {
      int yes = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    });
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(m_);
      notifications_.push_back(json::parse(req.body, nullptr, false));
      res.status = 200;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~ChainReceiver() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  // Notifications of `alertname` with that status.
  size_t count(const std::string& alertname, const std::string& status) {
    std::lock_guard lock(m_);
    size_t n = 0;
    for (const auto& p : notifications_)
      if (p.is_object() && p.value("status", "") == status &&
          p["groupLabels"].value("alertname", "") == alertname)
        ++n;
    return n;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex m_;
  std::vector<json> notifications_;
};

// Alertmanager on 127.0.0.1, no cluster, a temporary storage; quick to group and notify so
// the test stays short. Killed by its PID when the test ends.
class Alertmanager {
 public:
  explicit Alertmanager(int receiver_port) : port_(free_port()) {
    std::ofstream(dir_.file("alertmanager.yml")) << R"(route:
  receiver: test
  group_by: [alertname]
  group_wait: 100ms
  group_interval: 500ms
  repeat_interval: 1h
receivers:
  - name: test
    webhook_configs:
      - url: http://127.0.0.1:)" << receiver_port << R"(/hook
        send_resolved: true
)";
    std::vector<std::string> argv = {kAlertmanager,
                                     "--config.file=" + dir_.file("alertmanager.yml"),
                                     "--storage.path=" + dir_.file("data"),
                                     "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                     "--cluster.listen-address=",
                                     "--log.level=warn"};
    std::string log = dir_.file("log");
    child_ = std::make_unique<Child>([argv, log] {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    });
    ready_ = wait_until([&] { return http_get(port_, "/-/ready").status == 200; }, 20000);
  }
  bool ready() const { return ready_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const {
    std::ifstream in(dir_.file("log"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // amtool against this Alertmanager.
  RunResult amtool(std::vector<std::string> args) const {
    args.insert(args.begin(), {kAmtool, "--alertmanager.url=" + url()});
    return run_program_in(args, {"PATH=/usr/bin:/bin", "HOME=" + dir_.path()});
  }
  // `amtool -o json alert query [--silenced] alertname=NAME`: the alerts it lists.
  json query(const std::string& alertname, bool silenced = false) const {
    std::vector<std::string> args = {"-o", "json", "alert", "query"};
    if (silenced) args.push_back("--silenced");
    args.push_back("alertname=" + alertname);
    auto r = amtool(args);
    if (r.exit_code != 0) return nullptr;
    return json::parse(r.out, nullptr, false);
  }

 private:
  TempDir dir_;
  int port_;
  std::unique_ptr<Child> child_;
  bool ready_ = false;
};

// One GPU; its process list has `gone` (a PID that exited) holding 8 GiB for `keeper`, a live
// process that inherited its device file: a ghost. Or nothing.
json chain_scenario(std::optional<pid_t> gone, pid_t keeper = 0) {
  json processes = json::array();
  if (gone) processes.push_back({{"pid", *gone}, {"used_bytes", 8 * GiB}, {"holders", {keeper}}});
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes", processes}}}}};
}

// The chain against the real Alertmanager, skipped where it is not installed. The world: a gone
// trainer's ghost on GPU 0, kept alive by a live process holding its stand-in device file.
class AlertmanagerChain : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_DOUBLE();
    if (::access(kAlertmanager, X_OK) != 0 || ::access(kAmtool, X_OK) != 0)
      GTEST_SKIP() << kAlertmanager << " or " << kAmtool
                   << " is not installed: install prometheus-alertmanager (scripts/install-deps.sh "
                      "does) to run the chain against the real Alertmanager";
    ghost_ = gone_trainer(dev_);  // its worker, in its group, keeps it
    nvml_ = std::make_unique<FakeNvml>(chain_scenario(ghost_->trainer, keeper()));
  }
  pid_t keeper() const { return ghost_->worker; }

  FakeDevRoot dev_;
  std::unique_ptr<GoneTrainer> ghost_;
  std::unique_ptr<FakeNvml> nvml_;
};

TEST_F(AlertmanagerChain, AGhostFiresResolvesAndASilenceKeepsItFromTheReceiver) {
  ChainReceiver receiver;
  Alertmanager am(receiver.port());
  ASSERT_TRUE(am.ready()) << am.log();

  TempDir cfg;
  // Two rules on the same ghost: GpuGhost is the one silenced later; GpuGhostSeen, never
  // silenced, shows when a notification of the re-fired ghost has had time to go out.
  std::ofstream(cfg.file("config.toml")) << R"(interval = "200ms"
[[alert]]
name = "GpuGhost"
condition = "finding"
code = "no-such-process"
severity = "critical"

[[alert]]
name = "GpuGhostSeen"
condition = "finding"
code = "no-such-process"

[[sink]]
name = "am"
type = "alertmanager"
url = ")" << am.url() << R"("
retry_backoff = "100ms"
)";
  DaemonProcess d({"--config", cfg.file("config.toml"), "--dev-root", dev_.path()}, nvml_->env());
  ASSERT_GT(d.port(), 0) << d.log();

  // Fires: Alertmanager has it, with gpureap's labels, and notified the receiver.
  json alerts;
  ASSERT_TRUE(wait_until([&] {
    alerts = am.query("GpuGhost");
    return alerts.is_array() && alerts.size() == 1;
  })) << alerts
      << d.log() << am.log();
  const json& labels = alerts[0]["labels"];
  EXPECT_EQ(labels["alertname"], "GpuGhost");
  EXPECT_EQ(labels["severity"], "critical");
  EXPECT_EQ(labels["instance"], host_name());
  EXPECT_EQ(labels["code"], "no-such-process") << alerts;
  EXPECT_NE(alerts[0]["annotations"].value("summary", ""), "") << alerts;
  EXPECT_EQ(alerts[0]["status"]["state"], "active") << alerts;
  ASSERT_TRUE(wait_until([&] { return receiver.count("GpuGhost", "firing") == 1; })) << am.log();
  EXPECT_EQ(d.metric("gpureap_alerts_sent_total{sink=\"am\",result=\"failure\"}"), 0);

  // The ghost is gone: gpureap sends endsAt, Alertmanager resolves it and says so.
  replace_scenario(*nvml_, chain_scenario(std::nullopt));
  ASSERT_TRUE(wait_until([&] {
    alerts = am.query("GpuGhost");
    return alerts.is_array() && alerts.empty();
  })) << alerts
      << d.log();
  ASSERT_TRUE(wait_until([&] { return receiver.count("GpuGhost", "resolved") == 1; })) << am.log();

  // Silenced, the ghost comes back: Alertmanager has it, suppressed, and keeps it from the
  // receiver, which meanwhile hears of the other rule's alert on the same ghost.
  auto silence = am.amtool({"silence", "add", "alertname=GpuGhost", "--author=gpureap-test",
                            "--comment=maintenance", "--duration=1h"});
  ASSERT_EQ(silence.exit_code, 0) << silence.err;
  const size_t seen_before = receiver.count("GpuGhostSeen", "firing");
  replace_scenario(*nvml_, chain_scenario(ghost_->trainer, keeper()));
  ASSERT_TRUE(wait_until([&] {
    alerts = am.query("GpuGhost", true);
    return alerts.is_array() && alerts.size() == 1 && alerts[0]["status"]["state"] == "suppressed";
  })) << alerts
      << d.log();
  EXPECT_FALSE(alerts[0]["status"]["silencedBy"].empty()) << alerts;
  ASSERT_TRUE(wait_until([&] { return receiver.count("GpuGhostSeen", "firing") > seen_before; }))
      << am.log();
  EXPECT_EQ(receiver.count("GpuGhost", "firing"), 1u);
}

// An HA pair, as sites run it: both Alertmanagers get every alert (peers share silences, not
// alerts), and with one of them down the other still hears the alert end, nothing counted as
// a failed send.
TEST_F(AlertmanagerChain, EachOfAnHaPairGetsTheAlertAndOneDownLosesNothing) {
  ChainReceiver receiver;
  Alertmanager first(receiver.port());
  auto second = std::make_unique<Alertmanager>(receiver.port());
  ASSERT_TRUE(first.ready()) << first.log();
  ASSERT_TRUE(second->ready()) << second->log();

  TempDir cfg;
  std::ofstream(cfg.file("config.toml")) << R"(interval = "200ms"
[[alert]]
name = "GpuGhost"
condition = "finding"
code = "no-such-process"

[[sink]]
name = "am"
type = "alertmanager"
url = [")" << first.url() << R"(", ")" << second->url()
                                         << R"("]
retry_backoff = "100ms"
)";
  DaemonProcess d({"--config", cfg.file("config.toml"), "--dev-root", dev_.path()}, nvml_->env());
  ASSERT_GT(d.port(), 0) << d.log();

  auto active_in = [](const Alertmanager& am) {
    json a = am.query("GpuGhost");
    return a.is_array() && a.size() == 1 && a[0]["status"]["state"] == "active";
  };
  ASSERT_TRUE(wait_until([&] { return active_in(first) && active_in(*second); }))
      << first.query("GpuGhost") << second->query("GpuGhost") << d.log();

  second.reset();  // one of the pair goes down
  replace_scenario(*nvml_, chain_scenario(std::nullopt));
  ASSERT_TRUE(wait_until([&] {
    json a = first.query("GpuGhost");
    return a.is_array() && a.empty();
  })) << first.query("GpuGhost")
      << d.log();
  // The one that took it made the send a success (counted once its answer is in); the one
  // down is only a warning in the log.
  EXPECT_TRUE(wait_until([&] {
    return d.metric("gpureap_alerts_sent_total{sink=\"am\",result=\"success\"}") >= 2;
  })) << d.log();
  EXPECT_EQ(d.metric("gpureap_alerts_sent_total{sink=\"am\",result=\"failure\"}"), 0) << d.log();
  EXPECT_TRUE(wait_until([&] {
    return d.log().find("1 of 2 Alertmanagers did not take the alerts") != std::string::npos;
  })) << d.log();
}

}  // namespace
}  // namespace gpureap::testing
