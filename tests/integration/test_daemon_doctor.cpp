// `gpureap doctor` answered by the daemon over its local socket: the same findings as its own
// two samples, a first sample the daemon kept from --settle before, and its own run whenever
// the daemon cannot answer as it would.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

// A trainer that died and left a forked worker holding its context: the critical ghost.
struct GhostMachine {
  FakeDevRoot dev;
  Ready ready;
  Child parent{[this] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    pid_t c = ::fork();
    if (c == 0) {
      for (;;) ::pause();
    }
    ready.send(c);
    ::_exit(0);
  }};
  pid_t ghost = parent.pid();
  pid_t worker = static_cast<pid_t>(ready.receive());
  std::optional<FakeNvml> nvml;
  TempDir run;
  std::string socket = run.file("gpureap.sock");

  GhostMachine() {
    parent.kill_and_reap();
    nvml.emplace(
        json{{"gpus",
              {{{"name", "NVIDIA H200"},
                {"uuid", "GPU-doc-0"},
                {"minor", 0},
                {"total_bytes", 80 * GiB},
                {"processes",
                 {{{"pid", ghost}, {"used_bytes", 8 * GiB}, {"holders", {ghost, worker}}}}}}}}});
  }
  ~GhostMachine() {
    ::kill(worker, SIGKILL);
    wait_gone(worker);
  }
  std::vector<std::string> daemon_args() const {
    std::string path = run.file("config.toml");
    std::ofstream(path) << "interval = \"200ms\"\nlocal_socket = \"" << socket << "\"\n";
    return {"--config", path, "--dev-root", dev.path()};
  }
  std::vector<std::string> client_env() const { return {"GPUREAP_DAEMON_SOCKET=" + socket}; }
};

json findings_of(const RunResult& r) {
  return parse_output(r)["findings"];
}

TEST(DaemonDoctor, FindingsThroughTheDaemonAreTheCommandsOwn) {
  REQUIRE_DOUBLE();
  GhostMachine m;
  DaemonProcess d(m.daemon_args(), m.nvml->env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  // Until the daemon keeps a sample from --settle (1 s) before its latest: its first.
  const auto first = d.metric("gpureap_sample_timestamp_seconds");
  ASSERT_TRUE(first) << d.log();
  ASSERT_TRUE(wait_until([&] {
    auto latest = d.metric("gpureap_sample_timestamp_seconds");
    return latest && *latest >= *first + 1.2;
  })) << d.log();
  auto served = run_gpureap({"doctor", "--json", "--settle", "1s"}, m.client_env());
  EXPECT_EQ(served.exit_code, 2) << served.err;
  auto doc = parse_output(served);
  EXPECT_EQ(doc["source"]["kind"], "daemon") << served.out;
  auto own =
      run_gpureap({"doctor", "--json", "--settle", "1s", "--no-daemon", "--dev-root", m.dev.path()},
                  m.nvml->env());
  EXPECT_EQ(own.exit_code, 2) << own.err;
  EXPECT_EQ(parse_output(own)["source"], json({{"kind", "scan"}}));
  EXPECT_EQ(doc["findings"], findings_of(own));
  bool ghost_found = false;
  for (const auto& f : doc["findings"])
    if (f["code"] == "no-such-process") {
      ghost_found = true;
      EXPECT_EQ(f["pids"], json::array({m.ghost, m.worker}));
    }
  EXPECT_TRUE(ghost_found) << doc["findings"].dump(2);
  // The table ends with the line that names the daemon; --only is honoured there too.
  // The orphan is the ghost's keeper: --only orphan-holder keeps the ghost's one finding (and
  // its exit status), whose facet it is.
  auto table = run_gpureap({"doctor", "--settle", "1s", "--only", "orphan-holder"}, m.client_env());
  EXPECT_EQ(table.exit_code, 2) << table.out << table.err;
  EXPECT_NE(table.out.find("(from the gpureap daemon, snapshot "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("[orphan-holder]"), std::string::npos) << table.out;
  auto other =
      run_gpureap({"doctor", "--settle", "1s", "--only", "stopped-holder"}, m.client_env());
  EXPECT_EQ(other.exit_code, 0) << other.out << other.err;
  EXPECT_EQ(other.out.find("no-such-process"), std::string::npos) << other.out;
}

TEST(DaemonDoctor, WhatTheDaemonCannotAnswerRunsOnItsOwn) {
  REQUIRE_DOUBLE();
  GhostMachine m;
  DaemonProcess d(m.daemon_args(), m.nvml->env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  // The daemon keeps nothing from 30 s before its first samples: doctor settles by itself, on
  // this machine's own /dev and without the NVML double, where no GPU is. So its own run is
  // what answers: the daemon has a GPU 0, this machine has none.
  auto longer = run_gpureap({"doctor", "--json", "--settle", "30s", "--gpu", "0"}, m.client_env());
  EXPECT_NE(longer.err.find("GPU 0 does not exist"), std::string::npos) << longer.err;
  EXPECT_EQ(longer.out, "");
  // --no-daemon and roots never ask (nor --fix, which signals from the command's own view).
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"doctor", "--json", "--settle", "0s", "--no-daemon"},
           {"doctor", "--json", "--settle", "0s", "--dev-root", m.dev.path()}}) {
    auto r = run_gpureap(args, m.client_env());
    EXPECT_EQ(parse_output(r)["source"]["kind"], "scan") << r.out << r.err;
  }
  // A GPU the daemon does not have: the command's own run answers (and would name it).
  auto missing = run_gpureap({"doctor", "--json", "--gpu", "7", "--settle", "0s"}, m.client_env());
  EXPECT_NE(missing.err.find("GPU 7 does not exist"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.out, "");
  // The daemon still answers what it can.
  auto served = run_gpureap({"doctor", "--json", "--settle", "0s"}, m.client_env());
  EXPECT_EQ(parse_output(served)["source"]["kind"], "daemon") << served.out << served.err;
}

}  // namespace
}  // namespace gpureap::testing
