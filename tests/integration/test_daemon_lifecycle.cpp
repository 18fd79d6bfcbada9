// `gpureap daemon`: signals, reloads, systemd notifications, its log, --check-config.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

struct LifecycleScene {
  FakeDevRoot dev;
  Ready ready;
  Child job{[this] {
    hold(dev.dev("nvidia0"));
    ready.signal();
  }};
  std::unique_ptr<FakeNvml> nvml;
  TempDir cfg;

  LifecycleScene() {
    ready.wait();
    nvml = std::make_unique<FakeNvml>(
        json{{"gpus",
              {{{"uuid", "GPU-0000"},
                {"minor", 0},
                {"processes", {{{"pid", job.pid()}, {"used_bytes", 3 * GiB}}}}}}}});
  }
  std::string config(const std::string& text) {
    std::ofstream(cfg.file("config.toml")) << text;
    return cfg.file("config.toml");
  }
  std::vector<std::string> args(const std::string& config_path) {
    return {"--config", config_path, "--dev-root", dev.path()};
  }
};

// systemd's notification socket, played by the test.
class NotifySocket {
 public:
  NotifySocket() {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path().c_str(), sizeof addr.sun_path - 1);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      ADD_FAILURE() << std::strerror(errno);
  }
  ~NotifySocket() { ::close(fd_); }
  std::string path() const { return dir_.file("notify"); }
  // Every message received until one starts with `prefix` (included), or all of them on timeout.
  std::vector<std::string> until(const std::string& prefix, int ms = 15000) {
    std::vector<std::string> got;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) != 1) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      got.emplace_back(buf, static_cast<size_t>(n));
      if (got.back().rfind(prefix, 0) == 0) return got;
    }
    ADD_FAILURE() << "no " << prefix << " message";
    return got;
  }

 private:
  TempDir dir_;
  int fd_ = -1;
};

bool any_starts_with(const std::vector<std::string>& messages, const std::string& prefix) {
  for (const auto& m : messages)
    if (m.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(DaemonLifecycle, SighupAppliesAGoodConfig) {
  REQUIRE_DOUBLE();
  LifecycleScene s;
  auto path = s.config("interval = \"250ms\"\n");
  DaemonProcess d(s.args(path), s.nvml->env());
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_up ") == 1; })) << d.log();
  EXPECT_EQ(d.get("/metrics").body.find("gpureap_process_memory_bytes{"), std::string::npos);

  s.config("interval = \"250ms\"\nper_process_metrics = true\n");
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_log("configuration reloaded")) << d.log();
  EXPECT_TRUE(wait_until([&] {
    return d.metric(
               "gpureap_process_memory_bytes{gpu=\"0\",uuid=\"GPU-0000\",pci_bus_id=\"00000000:17:"
               "00.0\",vendor=\"nvidia\",pid=\"" +
               std::to_string(s.job.pid())) == 3.0 * GiB;
  })) << d.get("/metrics").body;
  EXPECT_NE(d.log().find("<5>gpureap: configuration reloaded: config " + path), std::string::npos)
      << d.log();
}

TEST(DaemonLifecycle, SighupWithABadConfigKeepsTheOldOne) {
  REQUIRE_DOUBLE();
  LifecycleScene s;
  auto path = s.config("interval = \"250ms\"\nper_process_metrics = true\n");
  DaemonProcess d(s.args(path), s.nvml->env());
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_process_memory_bytes{").has_value(); }))
      << d.log();

  s.config("interval = \"250ms\"\nper_process_metric = false\n");  // a typo
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_log("reload failed")) << d.log();
  auto log = d.log();
  EXPECT_NE(log.find("<3>gpureap: reload failed, keeping the configuration from " + path),
            std::string::npos)
      << log;
  EXPECT_NE(
      log.find(path +
               ":2:1: unknown key \"per_process_metric\" (did you mean \"per_process_metrics\"?)"),
      std::string::npos)
      << log;
  // Still running, still on the old config.
  EXPECT_TRUE(is_alive(d.pid()));
  EXPECT_TRUE(d.metric("gpureap_process_memory_bytes{").has_value());

  // The path became a directory: that is no config either, and the token and policies of the
  // running one stay.
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  d.signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return d.log().find("not a regular file") != std::string::npos; }))
      << d.log();
  EXPECT_TRUE(is_alive(d.pid()));
  EXPECT_TRUE(d.metric("gpureap_process_memory_bytes{").has_value());
  std::filesystem::remove(path);

  // A config that cannot be read at all is refused the same way.
  std::filesystem::remove(path);
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_log("cannot read config file " + path)) << d.log();
  EXPECT_TRUE(d.metric("gpureap_process_memory_bytes{").has_value());
}

TEST(DaemonLifecycle, SigtermAndSigintStopCleanly) {
  REQUIRE_DOUBLE();
  for (int sig : {SIGTERM, SIGINT}) {
    LifecycleScene s;
    DaemonProcess d(s.args(s.config("")), s.nvml->env());
    ASSERT_GT(d.port(), 0);
    d.signal(sig);
    EXPECT_EQ(d.wait_exit(), 0) << d.log();
    auto log = d.log();
    EXPECT_NE(
        log.find(std::string("<5>gpureap: stopping on ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT")),
        std::string::npos)
        << log;
    EXPECT_NE(log.find("<6>gpureap: stopped"), std::string::npos) << log;
    EXPECT_EQ(http_get(d.port(), "/healthz").status, 0);  // the port is closed
  }
}

// Outside the journal (a terminal, a file, a pipe to another program) the lines carry no syslog
// priority: $JOURNAL_STREAM names another stream, as for a daemon started from a shell of a
// systemd user session, whose stderr is the terminal.
TEST(DaemonLifecycle, NoPriorityPrefixesOutsideTheJournal) {
  REQUIRE_DOUBLE();
  LifecycleScene s;
  auto env = s.nvml->env();
  env.push_back("JOURNAL_STREAM=1:1");
  DaemonProcess d(s.args(s.config("")), env);
  ASSERT_GT(d.port(), 0) << d.log();
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0) << d.log();
  auto log = d.log();
  EXPECT_NE(log.find("gpureap: listening on http://127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("gpureap: stopped"), std::string::npos) << log;
  for (const char* prefix : {"<3>", "<4>", "<5>", "<6>", "<7>"})
    EXPECT_EQ(log.find(prefix), std::string::npos) << prefix << " in\n" << log;
}

// SIGTERM while a policy waits out its grace on a job that ignores SIGTERM, over a slow driver
// (its shutdown takes seconds, as NVML's does without persistence mode): the daemon still
// stops cleanly and exits 0, and sends the job nothing more on the way out.
TEST(DaemonLifecycle, SigtermStopsDuringAPolicyActionOverASlowDriver) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0", [] { ::signal(SIGTERM, SIG_IGN); });
  FakeNvml nvml(
      json{{"slow_calls", {{"nvmlShutdown", 5000}, {"nvmlDeviceGetProcessUtilization", 200}}},
           {"gpus",
            {{{"uuid", "GPU-0000"},
              {"minor", 0},
              {"processes", {{{"pid", job.pid()}, {"used_bytes", 3 * GiB}}}}}}}});
  TempDir cfg;
  std::ofstream(cfg.file("config.toml")) << "interval = \"200ms\"\nenforce = true\n"
                                         << "audit_log = \"" << cfg.file("audit.jsonl") << "\"\n"
                                         << "[[policy]]\nname = \"stubborn\"\n"
                                         << "min_memory = \"1GiB\"\nafter = \"0s\"\n"
                                         << "action = \"terminate\"\ngrace = \"10m\"\n";
  DaemonProcess d({"--config", cfg.file("config.toml"), "--dev-root", dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(d.wait_log("policy stubborn: terminate PID " + std::to_string(job.pid()))) << d.log();
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0) << d.log();
  EXPECT_NE(d.log().find("<6>gpureap: stopped"), std::string::npos) << d.log();
  EXPECT_TRUE(is_alive(job.pid()));  // no SIGKILL followed the SIGTERM it ignored
}

TEST(DaemonLifecycle, TellsSystemdReadyStatusWatchdogReloadingAndStopping) {
  REQUIRE_DOUBLE();
  LifecycleScene s;
  NotifySocket systemd;
  auto env = s.nvml->env();
  env.push_back("NOTIFY_SOCKET=" + systemd.path());
  env.push_back("WATCHDOG_USEC=400000");  // pings every 200 ms
  DaemonProcess d(s.args(s.config("interval = \"250ms\"\n")), env);
  auto start = systemd.until("READY=1");
  EXPECT_EQ(start.back(), "READY=1");
  auto running = systemd.until("STATUS=");
  EXPECT_NE(running.back().find("STATUS=driver up, 1 GPU, 1 GPU process, "), std::string::npos)
      << running.back();
  EXPECT_NE(running.back().find("http://127.0.0.1:" + std::to_string(d.port()) + "/"),
            std::string::npos);
  systemd.until("WATCHDOG=1");
  systemd.until("WATCHDOG=1");  // again: it keeps pinging

  d.signal(SIGHUP);
  auto reload = systemd.until("RELOADING=1");
  EXPECT_TRUE(any_starts_with(systemd.until("READY=1"), "READY=1"));

  d.signal(SIGTERM);
  EXPECT_TRUE(any_starts_with(systemd.until("STOPPING=1"), "STOPPING=1"));
  EXPECT_EQ(d.wait_exit(), 0);
}

TEST(DaemonLifecycle, LogLinesCarrySyslogPriorities) {
  REQUIRE_DOUBLE();
  LifecycleScene s;
  DaemonProcess d(s.args(s.config("")), s.nvml->env());
  ASSERT_TRUE(d.wait_log("first sample taken"));
  auto log = d.log();
  size_t start = 0, lines = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    std::string line = log.substr(start, end - start);
    start = end == std::string::npos ? log.size() : end + 1;
    if (line.empty()) continue;
    ++lines;
    EXPECT_TRUE(line.size() > 3 && line[0] == '<' && line[1] >= '0' && line[1] <= '7' &&
                line[2] == '>')
        << line;
  }
  EXPECT_GE(lines, 3u);
  EXPECT_NE(log.find("<5>gpureap: listening on http://127.0.0.1:"), std::string::npos);
}

TEST(DaemonLifecycle, AnAddressInUseIsAnErrorNotASharedPort) {
  REQUIRE_DOUBLE();
  LifecycleScene s;
  DaemonProcess first(s.args(s.config("")), s.nvml->env());
  ASSERT_GT(first.port(), 0);
  auto args = s.args(s.cfg.file("config.toml"));
  args.insert(args.end(), {"--listen", "127.0.0.1:" + std::to_string(first.port())});
  DaemonProcess second(args, s.nvml->env(), false);
  EXPECT_EQ(second.wait_exit(), 1) << second.log();
  EXPECT_NE(second.log().find("cannot listen on 127.0.0.1:" + std::to_string(first.port())),
            std::string::npos)
      << second.log();
  EXPECT_EQ(first.get("/healthz").status, 200);
}

TEST(DaemonLifecycle, WithoutAConfigFileItRunsOnDefaults) {
  REQUIRE_DOUBLE();
  LifecycleScene s;
  // No --config and no /etc/gpureap/config.toml in the test environment (when there is one,
  // this checks nothing about defaults but still that the daemon starts).
  DaemonProcess d({"--dev-root", s.dev.path()}, s.nvml->env());
  ASSERT_GT(d.port(), 0) << d.log();
  if (!std::filesystem::exists("/etc/gpureap/config.toml")) {
    EXPECT_NE(d.log().find("config built-in defaults: interval 1s, holder scan every 10s (all fds "
                           "every 1m00s), history 1h00m"),
              std::string::npos)
        << d.log();
  }
}

TEST(DaemonLifecycle, ABadConfigAtStartIsExitCode2) {
  LifecycleScene s;
  auto path = s.config("listen = \"localhost\"\n");
  auto r = run_gpureap({"daemon", "--config", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ":1:10: invalid listen address \"localhost\": no port"),
            std::string::npos)
      << r.err;
  auto missing = run_gpureap({"daemon", "--config", s.cfg.file("absent.toml")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot read config file"), std::string::npos) << missing.err;
  auto listen = run_gpureap({"daemon", "--listen", "nowhere"});
  EXPECT_EQ(listen.exit_code, 2);
  EXPECT_NE(listen.err.find("HOST:PORT"), std::string::npos) << listen.err;
}

TEST(DaemonCheckConfig, ValidFileIsExitZero) {
  TempDir dir;
  std::ofstream(dir.file("ok.toml")) << "interval = \"2s\"\nlisten = \"0.0.0.0:9842\"\n";
  auto r = run_gpureap({"daemon", "--check-config", dir.file("ok.toml")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, dir.file("ok.toml") + ": ok\n");
}

TEST(DaemonCheckConfig, BrokenFilesAreExitTwoWithEveryProblemAndItsLine) {
  TempDir dir;
  struct Case {
    std::string text, expected;
  };
  std::vector<Case> cases = {
      {"interval = \"1s\"\nholder_scan_intervall = \"5s\"\n",
       ":2:1: unknown key \"holder_scan_intervall\" (did you mean \"holder_scan_interval\"?)"},
      {"interval = \"1s\"\nlisten = \"127.0.0.1:9842\n", ":2:"},  // unterminated string
      {"\n\nhistory = \"forever\"\n", ":3:11: history: "},
      {"interval = 1\n", "interval is a duration: write it as a string with a unit"},
      {"per_process_metrics = 1\n", "per_process_metrics must be true or false"},
      {"interval = \"30s\"\nholder_scan_interval = \"10s\"\n",
       ":2:24: holder_scan_interval (10s) must not be shorter than interval (30s)"},
      {"auth_token_file = \"" + dir.file("no-token") + "\"\n",
       "cannot read auth_token_file " + dir.file("no-token")},
  };
  for (const auto& c : cases) {
    std::ofstream(dir.file("bad.toml")) << c.text;
    auto r = run_gpureap({"daemon", "--check-config", dir.file("bad.toml")});
    EXPECT_EQ(r.exit_code, 2) << c.text;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.text << "\n---\n" << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  std::ofstream(dir.file("many.toml")) << "a = 1\nb = 2\ninterval = \"x\"\n";
  auto many = run_gpureap({"daemon", "--check-config", dir.file("many.toml")});
  EXPECT_EQ(many.exit_code, 2);
  for (const char* where : {"many.toml:1:1:", "many.toml:2:1:", "many.toml:3:12:"})
    EXPECT_NE(many.err.find(where), std::string::npos) << where << "\n" << many.err;
  auto missing = run_gpureap({"daemon", "--check-config", dir.file("absent.toml")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot read config file " + dir.file("absent.toml")),
            std::string::npos);
}

TEST(DaemonCheckConfig, ADirectoryOrAFifoIsNotAConfig) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("conf.d"));
  auto r = run_gpureap({"daemon", "--check-config", dir.file("conf.d")});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(
      r.err.find("cannot read config file " + dir.file("conf.d") + ": it is not a regular file"),
      std::string::npos)
      << r.err;
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  auto fifo = run_gpureap({"daemon", "--check-config", dir.file("fifo")});  // must not block
  EXPECT_EQ(fifo.exit_code, 2);
  EXPECT_NE(fifo.err.find("not a regular file"), std::string::npos) << fifo.err;
}

TEST(DaemonCheckConfig, TheShippedConfigIsValid) {
  auto r = run_gpureap(
      {"daemon", "--check-config",
       (std::filesystem::path(__FILE__).parent_path() / "../../deploy/config.toml").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace gpureap::testing
