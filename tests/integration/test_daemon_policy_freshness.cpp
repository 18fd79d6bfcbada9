// A cleanup policy decides on what is true now, never on an old reading: a job paused and
// resumed between the daemon's scans of /proc (an hour apart here, 10 minutes with its events),
// or resumed while its action waited its turn behind another one's grace and release wait, is
// no paused job, and nothing is sent to it. Real processes of another user, the real daemon in
// both of its modes, and the NVML test double.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <set>

#include "daemon_modes.h"
#include "support.h"

namespace gpureap::testing {
namespace {
namespace policy_freshness {

using nlohmann::json;

constexpr uid_t kNobody = 65534;

json scenario(json processes) {
  return {
      {"gpus",
       {{{"name", "NVIDIA H200"}, {"uuid", "GPU-0000"}, {"minor", 0}, {"processes", processes}}}}};
}

std::string write_config(const TempDir& dir, const std::string& body) {
  std::ofstream(dir.file("config.toml"))
      << "interval = \"200ms\"\nholder_scan_interval = \"200ms\"\n"
      << "audit_log = \"" << dir.file("audit.jsonl") << "\"\n"
      << body;
  return dir.file("config.toml");
}

// Every signal that can be blocked is, but SIGCONT: one the daemon sends stays pending (and shows
// in /proc), while the test's own SIGCONT resumes it without leaving one.
void block_all_but_sigcont() {
  block_all_signals();
  sigset_t cont;
  sigemptyset(&cont);
  sigaddset(&cont, SIGCONT);
  sigprocmask(SIG_UNBLOCK, &cont, nullptr);
}

// Another user's job on the GPU: it opened the device file as root would hand it over, then
// runs as nobody, with its signals blocked so that any the daemon sends is seen.
Child users_job(const FakeDevRoot& dev) {
  Ready ready;
  Child c([&] {
    hold(dev.dev("nvidia0"));
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0)
      ::_exit(1);
    block_all_but_sigcont();
    ready.signal();
  });
  ready.wait();
  return c;
}

// The anomalies of `pid`'s row in the daemon's latest snapshot; empty when it has none (or no
// row).
std::vector<std::string> row_anomalies(const DaemonProcess& d, pid_t pid) {
  json snapshot = json::parse(d.get("/api/v1/snapshot").body, nullptr, false);
  json row = row_of(snapshot, pid);
  return row.is_object() && row.contains("anomalies") ? anomalies(row) : std::vector<std::string>{};
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(DaemonPolicyFreshness, AJobResumedWhileItsActionWaitedIsNotEnded) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "another user's job needs root to make";
  FakeDevRoot dev;
  // The first paused job, whose action runs first: its context lives on while `gate` does, so
  // the action waits for the memory until the test lets it go.
  Child first = holding(dev, "nvidia0");
  Child gate([] {});
  Child second = users_job(dev);
  FakeNvml nvml(scenario(json::array(
      {{{"pid", first.pid()}, {"used_bytes", GiB}, {"holders", {first.pid(), gate.pid()}}},
       {{"pid", second.pid()}, {"used_bytes", GiB}}})));
  ASSERT_EQ(::kill(first.pid(), SIGSTOP), 0);
  ASSERT_TRUE(wait_for_state(first.pid(), 'T'));
  TempDir cfg;
  auto config = write_config(cfg, R"(enforce = true
[[policy]]
name = "paused"
anomalies = ["stopped"]
after = "1s"
action = "terminate"
grace = "1s"
)");
  DaemonProcess d({"--config", config, "--dev-root", dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  // The first action ends its job and waits for the memory, which `gate` keeps listed.
  ASSERT_EQ(end_signal(first.pid()), SIGTERM) << d.log();

  // Meanwhile the other user's job is paused long enough to match: its action is queued.
  ASSERT_EQ(::kill(second.pid(), SIGSTOP), 0);
  ASSERT_TRUE(wait_for_state(second.pid(), 'T'));
  ASSERT_TRUE(d.wait_log("policy paused: terminate PID " + std::to_string(second.pid())))
      << d.log();
  // ... and resumed before its turn: the daemon's samples see it running again.
  ASSERT_EQ(::kill(second.pid(), SIGCONT), 0);
  ASSERT_TRUE(wait_until([&] {
    char s = state_of(second.pid());
    return s == 'S' || s == 'R';
  }));
  ASSERT_TRUE(wait_until([&] {
    auto a = row_anomalies(d, second.pid());
    return !has(a, "stopped");
  })) << d.log();
  ASSERT_TRUE(wait_new_samples(d, 2)) << d.log();
  EXPECT_TRUE(no_signal_pending(second.pid()));

  // The first action's memory comes back; the queued one has its turn.
  gate.kill_and_reap();
  std::vector<json> records;
  auto action_for = [&](pid_t pid) -> json {
    for (const auto& r : records)
      if (r["event"] == "action" && r["process"]["pid"] == pid) return r;
    return nullptr;
  };
  ASSERT_TRUE(wait_until(
      [&] {
        records = read_json_lines(cfg.file("audit.jsonl"));
        return !action_for(second.pid()).is_null();
      },
      30000))
      << d.log() << read_text(cfg.file("audit.jsonl"));

  // Nothing reached the resumed job: no signal pending (its signals are blocked), alive.
  EXPECT_TRUE(is_alive(second.pid())) << d.log();
  EXPECT_TRUE(no_signal_pending(second.pid())) << proc_status_field(second.pid(), "SigPnd") << " "
                                               << proc_status_field(second.pid(), "ShdPnd");
  json second_action = action_for(second.pid());
  EXPECT_EQ(second_action["outcome"], "unmatched") << second_action.dump(2);
  EXPECT_NE(second_action.value("detail", "").find("stopped"), std::string::npos)
      << second_action.dump(2);
  // The whole trail: two decisions, the first job's action, and the second's that sent nothing.
  ASSERT_EQ(records.size(), 4u) << read_text(cfg.file("audit.jsonl"));
  std::multiset<std::pair<std::string, pid_t>> trail;
  for (const auto& r : records)
    trail.insert({r["event"].get<std::string>(), r["process"]["pid"].get<pid_t>()});
  EXPECT_EQ(trail, (std::multiset<std::pair<std::string, pid_t>>{{"decision", first.pid()},
                                                                 {"decision", second.pid()},
                                                                 {"action", first.pid()},
                                                                 {"action", second.pid()}}));
  EXPECT_EQ(action_for(first.pid())["outcome"], "released") << read_text(cfg.file("audit.jsonl"));
}

class PausedBetweenScans : public ::testing::TestWithParam<Mode> {};

TEST_P(PausedBetweenScans, AJobResumedSinceTheLastScanIsNotEndedAsPaused) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "another user's job and the daemon's events need root";
  FakeDevRoot dev;
  Child job = users_job(dev);
  FakeNvml nvml(scenario(json::array({{{"pid", job.pid()}, {"used_bytes", GiB}}})));
  ASSERT_EQ(::kill(job.pid(), SIGSTOP), 0);
  ASSERT_TRUE(wait_for_state(job.pid(), 'T'));
  TempDir dir;
  auto d = mode_daemon(GetParam(), dir, dev, nvml, R"(enforce = true
[[policy]]
name = "paused"
anomalies = ["stopped"]
after = "5s"
action = "terminate"
grace = "1s"
)");
  // The daemon's scan read it paused ...
  ASSERT_TRUE(wait_until([&] { return has(row_anomalies(*d, job.pid()), "stopped"); })) << d->log();
  // ... and it runs again long before the policy's `after`, with no scan due for an hour.
  ASSERT_EQ(::kill(job.pid(), SIGCONT), 0);
  ASSERT_TRUE(wait_until([&] {
    char s = state_of(job.pid());
    return s == 'S' || s == 'R';
  }));
  ASSERT_TRUE(wait_until([&] { return !has(row_anomalies(*d, job.pid()), "stopped"); }))
      << "the daemon still reads the resumed job as paused\n"
      << d->log();
  ASSERT_TRUE(wait_until([&] {
    return d->metric("gpureap_policy_matching_processes{policy=\"paused\"} ") == 0;
  })) << d->log();
  ASSERT_TRUE(wait_new_samples(*d, 3)) << d->log();

  // Nothing was decided, nothing sent: alive, no signal pending (its signals are blocked).
  EXPECT_TRUE(is_alive(job.pid())) << d->log();
  EXPECT_TRUE(no_signal_pending(job.pid()));
  EXPECT_EQ(d->log().find("policy paused: terminate"), std::string::npos) << d->log();
  EXPECT_TRUE(read_json_lines(dir.file("audit.jsonl")).empty())
      << read_text(dir.file("audit.jsonl"));

  // Paused again, it is one again, as a scan would say.
  ASSERT_EQ(::kill(job.pid(), SIGSTOP), 0);
  ASSERT_TRUE(wait_for_state(job.pid(), 'T'));
  EXPECT_TRUE(wait_until([&] { return has(row_anomalies(*d, job.pid()), "stopped"); })) << d->log();
}

INSTANTIATE_TEST_SUITE_P(BothModes, PausedBetweenScans,
                         ::testing::Values(Mode::Events, Mode::Scans),
                         [](const ::testing::TestParamInfo<Mode>& i) {
                           return std::string(name_of(i.param));
                         });

}  // namespace policy_freshness
}  // namespace
}  // namespace gpureap::testing
