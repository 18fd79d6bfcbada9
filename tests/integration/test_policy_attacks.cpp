// The enforcing daemon against two unprivileged users: user A's processes (whose leftovers a
// policy is meant for) and user B's (an attacker, or a bystander), with forged names and reused
// numbers. A policy may act only on what the kernel vouches for: every test asserts the whole
// audit trail (each process a decision or an action named) and that every other process is
// alive with no signal pending. Real processes, the real daemon, the NVML test double.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "daemon_modes.h"
#include "support.h"

namespace gpureap::testing {
namespace {
namespace policy_attacks {

using nlohmann::json;

constexpr uid_t kUserA = 65533;
constexpr uid_t kUserB = 65534;

bool can_run_as_others() {
  return ::geteuid() == 0;
}

// In a child: becomes `uid` (group the same number, no supplementary groups).
void become(uid_t uid) {
  if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(1);
}

// Alive, and no signal was ever sent to it (it blocks them all: SIGKILL alone would end it).
void expect_untouched(pid_t pid, const std::string& who) {
  EXPECT_TRUE(is_alive(pid)) << who << " " << pid << " was ended";
  if (is_alive(pid)) {
    EXPECT_TRUE(no_signal_pending(pid)) << who << " " << pid << " was signalled";
  }
}

json gpu0(json processes) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes", processes}}}}};
}

// The audit trail as (event, PID) pairs.
std::multiset<std::pair<std::string, pid_t>> trail(const std::vector<json>& records) {
  std::multiset<std::pair<std::string, pid_t>> out;
  for (const auto& r : records)
    out.insert({r["event"].get<std::string>(), r["process"]["pid"].get<pid_t>()});
  return out;
}

// The first record of `event` about `pid`, or null.
json record_of(const std::vector<json>& records, const std::string& event, pid_t pid) {
  for (const auto& r : records)
    if (r["event"] == event && r["process"]["pid"] == pid) return r;
  return nullptr;
}

std::string audit_text(const TempDir& dir) {
  return read_text(dir.file("audit.jsonl"));
}

// --- a gone PID's name is its newcomer's --------------------------------------------------

// The daemon ties a worker to its gone trainer by what it saw: the fork (events) or the trainer
// ending between two scans of /proc (scans at every sample). `skip` says why the test cannot run
// where this machine's kernel does not let the daemon follow forks.
std::unique_ptr<DaemonProcess> watching_daemon(Mode mode, const TempDir& dir,
                                               const FakeDevRoot& dev, const FakeNvml& nvml,
                                               const std::string& policies, std::string& skip) {
  auto d = mode_daemon(mode, dir, dev, nvml, policies, Rescan::EverySample);
  if (mode == Mode::Events &&
      d->log().find("forks through the proc connector") == std::string::npos)
    skip = "the daemon cannot follow forks here: " + d->log();
  return d;
}

class GoneNumberTaken : public ::testing::TestWithParam<Mode> {};

// User A's trainer opens GPU 0, forks a worker that inherits the file, and ends while the daemon
// watches: the worker keeps the trainer's context, which the driver lists under the gone number.
// User B's process takes the number and calls itself "jupyter-lab"; the driver names a PID by
// whichever process has the number now. A policy for `command = "jupyter*"` must not end A's
// worker for a name B chose: a gone PID's command is unknown. A's own notebook, started once
// the daemon saw the number renamed, is ended: the policy acts, and on it alone.
TEST_P(GoneNumberTaken, ANameTheNewcomerChoseEndsNoKeeper) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  FakeDevRoot dev;
  FakeNvml nvml(gpu0(json::array()));
  TempDir dir;
  std::string skip;
  auto d = watching_daemon(GetParam(), dir, dev, nvml, R"(enforce = true
[[policy]]
name = "notebooks"
command = "jupyter*"
action = "kill"
)",
                           skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  KillStrays strays;
  // The trainer forks once the daemon follows it as a holder, as a job's DataLoader does.
  Ready opened, fork_now, forked, end_now;
  Child trainer([&] {
    hold(dev.dev("nvidia0"));
    become(kUserA);
    opened.signal();
    fork_now.wait(60000);
    if (::fork() == 0) {
      ::prctl(PR_SET_NAME, "loader-worker");
      block_all_signals();
      forked.send(::getpid());
      for (;;) ::pause();
    }
    end_now.wait(60000);
    ::_exit(0);
  });
  const pid_t gone = trainer.pid();
  opened.wait();
  ASSERT_TRUE(wait_until([&] {
    json t = row_of(snapshot_of(*d), gone);
    return t.is_object() && t["holds_device"] == true;
  })) << d->log();
  fork_now.signal();
  const pid_t worker = static_cast<pid_t>(forked.receive());
  strays.pids.push_back(worker);
  replace_scenario(nvml, gpu0(json::array(
                             {{{"pid", gone}, {"used_bytes", 8 * GiB}, {"holders", {worker}}}})));
  ASSERT_TRUE(wait_until([&] {
    json w = row_of(snapshot_of(*d), worker);
    return row_of(snapshot_of(*d), gone)["listed_by_driver"] == true && w.is_object() &&
           w["shares_context_of"] == json::array({gone});
  })) << d->log();
  end_now.signal();
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  ASSERT_TRUE(wait_until([&] {
    json w = row_of(snapshot_of(*d), worker);
    return w.is_object() && w["keeps"] == json::array({gone});
  })) << d->log()
      << snapshot_of(*d).dump(2);

  pid_t newcomer = fork_at(gone, [&] {
    become(kUserB);
    ::prctl(PR_SET_NAME, "jupyter-lab");
    block_all_signals();
    for (;;) ::pause();
  });
  if (newcomer < 0) GTEST_SKIP() << "the kernel did not hand out PID " << gone << " again";
  struct Reap {
    pid_t pid;
    ~Reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{newcomer};
  // The daemon's samples name the gone PID as the driver does now: by the newcomer's name (or
  // the worker was ended for it, which the trail below shows).
  ASSERT_TRUE(wait_until([&] {
    json r = row_of(snapshot_of(*d), gone);
    return (r.is_object() && r["driver_name"] == "jupyter-lab") || !is_alive(worker);
  })) << d->log()
      << snapshot_of(*d).dump(2);

  Ready started;
  Child notebook([&] {
    hold(dev.dev("nvidia0"));
    become(kUserA);
    ::prctl(PR_SET_NAME, "jupyter-lab");
    started.signal();
  });
  started.wait();
  replace_scenario(
      nvml, gpu0(json::array({{{"pid", gone}, {"used_bytes", 8 * GiB}, {"holders", {worker}}},
                              {{"pid", notebook.pid()}, {"used_bytes", 2 * GiB}}})));
  EXPECT_EQ(end_signal(notebook.pid()), SIGKILL) << d->log();
  std::vector<json> records;
  ASSERT_TRUE(wait_until([&] {
    records = read_json_lines(dir.file("audit.jsonl"));
    return !record_of(records, "action", notebook.pid()).is_null();
  })) << d->log()
      << audit_text(dir);

  EXPECT_EQ(trail(records), (std::multiset<std::pair<std::string, pid_t>>{
                                {"decision", notebook.pid()}, {"action", notebook.pid()}}))
      << audit_text(dir);
  expect_untouched(worker, "user A's worker");
  expect_untouched(newcomer, "user B's newcomer");
}

INSTANTIATE_TEST_SUITE_P(BothModes, GoneNumberTaken, ::testing::Values(Mode::Events, Mode::Scans),
                         [](const ::testing::TestParamInfo<Mode>& i) {
                           return std::string(name_of(i.param));
                         });

}  // namespace policy_attacks
}  // namespace
}  // namespace gpureap::testing
