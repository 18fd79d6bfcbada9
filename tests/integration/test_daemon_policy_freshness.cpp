// A cleanup policy decides on what is true now, never on an old reading: a job paused and
// resumed between the daemon's scans of /proc (an hour apart here, 10 minutes with its events),
// or resumed while its action waited its turn behind another one's grace and release wait, is
// no paused job, and nothing is sent to it; one that ended meanwhile is gone, unreaped or not. Real
// processes of another user, the real daemon in both of its modes, and the NVML test double.
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

// Two jobs paused under a policy that terminates paused jobs. The first one's action ends it and
// waits for its memory, which `gate` keeps listed; the other user's job, paused long enough to
// match meanwhile, has its action queued behind until the test ends `gate`.
class QueuedBehindAnother : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_DOUBLE();
    if (::geteuid() != 0) GTEST_SKIP() << "another user's job needs root to make";
    first_ = std::make_unique<Child>(holding(dev_, "nvidia0"));
    gate_ = std::make_unique<Child>([] {});
    second_ = std::make_unique<Child>(users_job(dev_));
    nvml_ = std::make_unique<FakeNvml>(scenario(
        json::array({{{"pid", first()}, {"used_bytes", GiB}, {"holders", {first(), gate_->pid()}}},
                     // Listed whatever becomes of it, as a context the driver has yet to tear down.
                     {{"pid", second()}, {"used_bytes", GiB}, {"leaked", true}}})));
    ASSERT_EQ(::kill(first(), SIGSTOP), 0);
    ASSERT_TRUE(wait_for_state(first(), 'T'));
    auto config = write_config(cfg_, R"(enforce = true
[[policy]]
name = "paused"
anomalies = ["stopped"]
after = "1s"
action = "terminate"
grace = "1s"
)");
    d_ = std::make_unique<DaemonProcess>(
        std::vector<std::string>{"--config", config, "--dev-root", dev_.path()}, nvml_->env());
    ASSERT_GT(d_->port(), 0) << d_->log();
    ASSERT_EQ(end_signal(first()), SIGTERM) << d_->log();
    ASSERT_EQ(::kill(second(), SIGSTOP), 0);
    ASSERT_TRUE(wait_for_state(second(), 'T'));
    ASSERT_TRUE(d_->wait_log("policy paused: terminate PID " + std::to_string(second())))
        << d_->log();
  }

  pid_t first() const { return first_->pid(); }
  pid_t second() const { return second_->pid(); }

  // Lets the first action's memory come back, and returns the audit trail once the queued
  // action's record is in it, with that record.
  std::vector<json> let_the_queue_move(json& second_action) {
    gate_->kill_and_reap();
    std::vector<json> records;
    EXPECT_TRUE(wait_until(
        [&] {
          records = read_json_lines(cfg_.file("audit.jsonl"));
          second_action = action_for(records, second());
          return !second_action.is_null();
        },
        30000))
        << d_->log() << read_text(cfg_.file("audit.jsonl"));
    return records;
  }

  static json action_for(const std::vector<json>& records, pid_t pid) {
    for (const auto& r : records)
      if (r["event"] == "action" && r["process"]["pid"] == pid) return r;
    return nullptr;
  }

  // The whole trail: two decisions, the first job's action, and the second's that sent nothing.
  void expect_the_whole_trail(const std::vector<json>& records) {
    ASSERT_EQ(records.size(), 4u) << read_text(cfg_.file("audit.jsonl"));
    std::multiset<std::pair<std::string, pid_t>> trail;
    for (const auto& r : records)
      trail.insert({r["event"].get<std::string>(), r["process"]["pid"].get<pid_t>()});
    EXPECT_EQ(trail, (std::multiset<std::pair<std::string, pid_t>>{{"decision", first()},
                                                                   {"decision", second()},
                                                                   {"action", first()},
                                                                   {"action", second()}}));
    EXPECT_EQ(action_for(records, first())["outcome"], "released")
        << read_text(cfg_.file("audit.jsonl"));
  }

  FakeDevRoot dev_;
  std::unique_ptr<Child> first_, gate_, second_;
  std::unique_ptr<FakeNvml> nvml_;
  TempDir cfg_;
  std::unique_ptr<DaemonProcess> d_;
};

TEST_F(QueuedBehindAnother, AJobResumedWhileItsActionWaitedIsNotEnded) {
  DaemonProcess& d = *d_;
  // Resumed before its turn: the daemon's samples see it running again.
  ASSERT_EQ(::kill(second(), SIGCONT), 0);
  ASSERT_TRUE(wait_until([&] {
    char s = state_of(second());
    return s == 'S' || s == 'R';
  }));
  ASSERT_TRUE(wait_until([&] {
    auto a = row_anomalies(d, second());
    return !has(a, "stopped");
  })) << d.log();
  ASSERT_TRUE(wait_new_samples(d, 2)) << d.log();
  EXPECT_TRUE(no_signal_pending(second()));

  json second_action;
  const auto records = let_the_queue_move(second_action);
  // Nothing reached the resumed job: no signal pending (its signals are blocked), alive.
  EXPECT_TRUE(is_alive(second())) << d.log();
  EXPECT_TRUE(no_signal_pending(second()))
      << proc_status_field(second(), "SigPnd") << " " << proc_status_field(second(), "ShdPnd");
  EXPECT_EQ(second_action["outcome"], "unmatched") << second_action.dump(2);
  EXPECT_NE(second_action.value("detail", "").find("stopped"), std::string::npos)
      << second_action.dump(2);
  expect_the_whole_trail(records);
}

// The queued job is killed before its turn and its parent has not reaped it: a zombie under its
// PID, with its start time, is an ended process. Its action ends as gone, not as a live process
// whose match broke (whose `after` would start again).
TEST_F(QueuedBehindAnother, AJobThatEndedWhileItsActionWaitedIsGoneThoughUnreaped) {
  DaemonProcess& d = *d_;
  ASSERT_EQ(::kill(second(), SIGKILL), 0);
  ASSERT_TRUE(wait_for_state(second(), 'Z'));
  ASSERT_TRUE(wait_until([&] {
    json row = row_of(json::parse(d.get("/api/v1/snapshot").body, nullptr, false), second());
    return row.is_object() && row["start_ticks"].is_null();
  })) << d.log();
  ASSERT_TRUE(wait_new_samples(d, 2)) << d.log();

  json second_action;
  const auto records = let_the_queue_move(second_action);
  EXPECT_EQ(second_action["outcome"], "gone") << second_action.dump(2);
  expect_the_whole_trail(records);
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

INSTANTIATE_TEST_SUITE_P(BothModes, PausedBetweenScans, kBothModes, mode_test_name);

}  // namespace policy_freshness
}  // namespace
}  // namespace gpureap::testing
