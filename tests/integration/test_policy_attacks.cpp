// The enforcing daemon against two unprivileged users: user A's processes (whose leftovers a
// policy is meant for) and user B's (an attacker, or a bystander), with forged names and reused
// numbers. A policy may act only on what the kernel vouches for: every test asserts the whole
// audit trail (each process a decision or an action named) and that every other process is
// alive with no signal pending. Real processes, the real daemon, the NVML test double.
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

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

using Trail = std::multiset<std::pair<std::string, pid_t>>;

// Waits until the audit log has an action record for each of `pids`; the records then.
std::vector<json> wait_actions(const TempDir& dir, const std::vector<pid_t>& pids, int ms = 30000) {
  std::vector<json> records;
  wait_until(
      [&] {
        records = read_json_lines(dir.file("audit.jsonl"));
        return std::all_of(pids.begin(), pids.end(),
                           [&](pid_t p) { return !record_of(records, "action", p).is_null(); });
      },
      ms);
  return records;
}

// A process of `uid` that holds GPU 0's file (opened before it became `uid`, as a job a root
// launcher started), calls itself `comm` and blocks every signal: one sent stays pending.
Child users_process(const FakeDevRoot& dev, uid_t uid, const std::string& comm) {
  Ready ready;
  Child c([&] {
    hold(dev.dev("nvidia0"));
    become(uid);
    ::prctl(PR_SET_NAME, comm.c_str());
    block_all_signals();
    ready.signal();
  });
  ready.wait();
  return c;
}

// User B's process under `number`, which the kernel hands out again (fork_at): it calls itself
// `comm`, holds `file` unless that is empty, and blocks every signal it can; killed and reaped
// when it goes out of scope. `pid` is -1 when the kernel handed the number to another.
struct Newcomer {
  Newcomer(pid_t number, const char* comm, const std::string& file)
      : pid(fork_at(number, [&] {
          if (!file.empty()) hold(file);
          become(kUserB);
          ::prctl(PR_SET_NAME, comm);
          block_all_signals();
          for (;;) ::pause();
        })) {}
  ~Newcomer() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  Newcomer(const Newcomer&) = delete;
  Newcomer& operator=(const Newcomer&) = delete;
  const pid_t pid;
};

void pause_process(pid_t pid) {
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  ASSERT_TRUE(wait_for_state(pid, 'T'));
}

// Its start time, in clock ticks since boot (field 22 of /proc/PID/stat); 0 when it is gone.
uint64_t start_ticks_of(pid_t pid) {
  std::string s = read_text("/proc/" + std::to_string(pid) + "/stat");
  auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(s.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::stoull(field);
  return 0;
}

// The name the password database gives `uid`, else the number (as gpureap names it).
std::string user_name_of(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  return pw ? pw->pw_name : std::to_string(uid);
}

// The daemon's row of `pid` in its latest sample, or null.
json daemon_row(const DaemonProcess& d, pid_t pid) {
  return row_of(snapshot_of(d), pid);
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

// User A's trainer: it holds GPU 0's file, forks a worker that inherits it when told (once the
// daemon follows the trainer as a holder, as a job's DataLoader does), and ends when told. The
// worker blocks every signal, and is SIGKILLed with the struct.
struct TrainerOfA {
  explicit TrainerOfA(const FakeDevRoot& dev)
      : child([this, file = dev.dev("nvidia0")] {
          hold(file);
          become(kUserA);
          opened.signal();
          fork_now.wait(60000);
          if (::fork() == 0) {
            ::prctl(PR_SET_NAME, "loader-worker");
            block_all_signals();
            forked.send(::getpid());
            for (;;) ::pause();
          }
          for (;;) ::pause();
        }) {
    opened.wait();
  }
  pid_t pid() const { return child.pid(); }
  pid_t fork_worker() {
    fork_now.signal();
    worker = static_cast<pid_t>(forked.receive());
    strays.pids.push_back(worker);
    return worker;
  }
  // Its number is free once this returns (reaped: nothing signals it again).
  void end() { child.kill_and_reap(); }

  Ready opened, fork_now, forked;
  KillStrays strays;
  Child child;
  pid_t worker = -1;
};

class GoneNumberTaken : public ::testing::TestWithParam<Mode> {};

// User A's trainer opens GPU 0, forks a worker that inherits the file, and ends while the daemon
// watches: the worker keeps the trainer's context, which the driver lists under the gone number.
// User B's process takes the number and calls itself "jupyter-lab"; the driver names a PID by
// whichever process has the number now. A policy for `command = "jupyter*"` must not end A's
// worker for a name B chose: a gone PID's command is unknown. A's own notebook, started once
// the daemon has sampled the renamed number, is ended: the policy acts, and on it alone.
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
  TrainerOfA trainer(dev);
  const pid_t gone = trainer.pid();
  ASSERT_TRUE(wait_until([&] {
    json t = row_of(snapshot_of(*d), gone);
    return t.is_object() && t["holds_device"] == true;
  })) << d->log();
  const pid_t worker = trainer.fork_worker();
  replace_scenario(
      nvml, gpu0(json::array({{{"pid", gone}, {"used_bytes", 8 * GiB}, {"holders", {worker}}}})));
  ASSERT_TRUE(wait_until([&] {
    json w = row_of(snapshot_of(*d), worker);
    return row_of(snapshot_of(*d), gone)["listed_by_driver"] == true && w.is_object() &&
           w["shares_context_of"] == json::array({gone});
  })) << d->log();
  trainer.end();
  ASSERT_TRUE(wait_until([&] {
    json w = row_of(snapshot_of(*d), worker);
    return w.is_object() && w["keeps"] == json::array({gone});
  })) << d->log()
      << snapshot_of(*d).dump(2);

  const Newcomer taken(gone, "jupyter-lab", "");
  const pid_t newcomer = taken.pid;
  if (newcomer < 0) GTEST_SKIP() << "the kernel did not hand out PID " << gone << " again";
  // The driver names the gone PID by the newcomer's name now (the double, as NVML does, reads
  // it from /proc). The daemon samples that a few times; the name is the newcomer's alone,
  // never the gone listing's, and the policy's `command` cannot match by it.
  ASSERT_TRUE(wait_new_samples(*d, 3)) << d->log();
  EXPECT_TRUE(row_of(snapshot_of(*d), gone)["driver_name"].is_null()) << snapshot_of(*d).dump(2);

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

  EXPECT_EQ(trail(records), (Trail{{"decision", notebook.pid()}, {"action", notebook.pid()}}))
      << audit_text(dir);
  expect_untouched(worker, "user A's worker");
  expect_untouched(newcomer, "user B's newcomer");
}

INSTANTIATE_TEST_SUITE_P(BothModes, GoneNumberTaken, kBothModes, mode_test_name);

// --- user and uid scopes against look-alikes ----------------------------------------------

// A's job and B's look-alike share a name and a GPU, and so do A's and B's paused processes. A
// policy scoped to A's uid ends A's job alone; one scoped to B's user name ends B's paused
// process alone: a name chooses nothing across users.
TEST(PolicyAttacks, AUserScopedPolicyEndsNoLookAlikeOfAnotherUser) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root to run processes as two users";
  FakeDevRoot dev;
  Child a_job = users_process(dev, kUserA, "python");
  Child a_paused = users_process(dev, kUserA, "python3");
  Child b_alike = users_process(dev, kUserB, "python");
  Child b_paused = users_process(dev, kUserB, "python");
  pause_process(a_paused.pid());
  pause_process(b_paused.pid());
  json listed = json::array();
  for (pid_t p : {a_job.pid(), a_paused.pid(), b_alike.pid(), b_paused.pid()})
    listed.push_back({{"pid", p}, {"used_bytes", 2 * GiB}});
  FakeNvml nvml(gpu0(listed));
  TempDir dir;
  auto d = mode_daemon(
      Mode::Scans, dir, dev, nvml,
      "enforce = true\n[[policy]]\nname = \"a-python\"\nuid = " + std::to_string(kUserA) +
          "\ncommand = \"python\"\naction = \"kill\"\n\n[[policy]]\nname = "
          "\"b-paused\"\nuser = \"" +
          user_name_of(kUserB) + "\"\nanomalies = [\"stopped\"]\naction = \"kill\"\n",
      Rescan::EverySample);
  auto records = wait_actions(dir, {a_job.pid(), b_paused.pid()});
  ASSERT_TRUE(wait_new_samples(*d, 3)) << d->log();
  records = read_json_lines(dir.file("audit.jsonl"));
  EXPECT_EQ(trail(records), (Trail{{"decision", a_job.pid()},
                                   {"action", a_job.pid()},
                                   {"decision", b_paused.pid()},
                                   {"action", b_paused.pid()}}))
      << audit_text(dir) << d->log();
  EXPECT_EQ(end_signal(a_job.pid()), SIGKILL);
  EXPECT_EQ(end_signal(b_paused.pid()), SIGKILL);
  expect_untouched(a_paused.pid(), "user A's paused process");
  expect_untouched(b_alike.pid(), "user B's look-alike");
}

// --- a number reused while the policy's `after` runs --------------------------------------

class NumberReusedDuringAfter : public ::testing::TestWithParam<Mode> {};

// User A's job, listed with 2 GiB, matches a policy whose `after` has an hour to run. It ends,
// its context stays listed (leaked), and user B's process takes the number and opens GPU 0's
// file. The `after` is then cut to a second by a reload, so the match that has held since the
// job ended is due at once: the daemon decides on the gone listing (which nothing keeps: it
// refuses), never on B's process, which is not the listed one.
TEST_P(NumberReusedDuringAfter, TheActionNeverReachesTheNewcomer) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  FakeDevRoot dev;
  Child job = users_process(dev, kUserA, "trainer");
  const pid_t number = job.pid();
  const uint64_t job_start = start_ticks_of(number);
  FakeNvml nvml(gpu0(json::array({{{"pid", number}, {"used_bytes", 2 * GiB}, {"leaked", true}}})));
  TempDir dir;
  const std::string policy = R"(enforce = true
[[policy]]
name = "big"
min_memory = "1GiB"
action = "kill"
after = )";
  auto d = mode_daemon(GetParam(), dir, dev, nvml, policy + "\"1h\"\n", Rescan::EverySample);
  auto tracked = [&](std::optional<uint64_t> ticks) {
    json doc = json::parse(d->get("/api/v1/policies").body, nullptr, false);
    if (!doc.contains("policies")) return false;
    for (const auto& p : doc["policies"][0]["processes"])
      if (p["pid"] == number && (ticks ? p["start_ticks"] == *ticks : p["start_ticks"].is_null()))
        return p["state"] == "waiting";
    return false;
  };
  ASSERT_TRUE(wait_until([&] { return tracked(job_start); })) << d->log();

  job.kill_and_reap();
  const Newcomer taken(number, "trainer", dev.dev("nvidia0"));
  const pid_t newcomer = taken.pid;
  if (newcomer < 0) GTEST_SKIP() << "the kernel did not hand out PID " << number << " again";
  // The daemon sees the number taken by a process that is not the listed one, and the gone
  // listing waits out its `after`.
  ASSERT_TRUE(wait_until([&] {
    json r = daemon_row(*d, number);
    return r.is_object() && r["reused_by"].is_object() && tracked(std::nullopt);
  })) << d->log()
      << snapshot_of(*d).dump(2);

  {
    std::string config = read_text(dir.file("config.toml"));
    config.replace(config.find("\"1h\"\n", config.find("after = ")), 5, "\"1s\"\n");
    std::ofstream(dir.file("config.toml")) << config;
  }
  d->signal(SIGHUP);
  ASSERT_TRUE(d->wait_log("configuration reloaded")) << d->log();
  auto records = wait_actions(dir, {number});
  ASSERT_TRUE(wait_new_samples(*d, 3)) << d->log();
  records = read_json_lines(dir.file("audit.jsonl"));
  EXPECT_EQ(trail(records), (Trail{{"decision", number}, {"action", number}})) << audit_text(dir);
  // The gone PID is named by nothing the newcomer chose (the driver's name for it is the
  // newcomer's now).
  for (const auto& r : records) {
    EXPECT_TRUE(r["process"]["start_ticks"].is_null()) << r.dump(2);
    EXPECT_EQ(r["process"]["comm"], "") << r.dump(2);
  }
  EXPECT_EQ(record_of(records, "action", number)["outcome"], "refused") << audit_text(dir);
  expect_untouched(newcomer, "user B's newcomer");
}

INSTANTIATE_TEST_SUITE_P(BothModes, NumberReusedDuringAfter, kBothModes, mode_test_name);

// --- a number reused while the action waits its turn ---------------------------------------

class NumberReusedWhileQueued : public ::testing::TestWithParam<Mode> {};

// A first paused job's action waits for its memory (a gate keeps the context listed). Meanwhile
// user A's paused job matches, and its action is queued behind. Before its turn, A's job ends
// and user B's process, running, takes the number and opens GPU 0's file. The queued action is
// restated on the daemon's samples and ends as "gone": nothing reaches B's process.
TEST_P(NumberReusedWhileQueued, TheQueuedActionEndsAsGone) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  FakeDevRoot dev;
  Child first = holding(dev, "nvidia0");
  Child gate([] {});
  Child job = users_process(dev, kUserA, "trainer");
  const pid_t number = job.pid();
  FakeNvml nvml(gpu0(json::array(
      {{{"pid", first.pid()}, {"used_bytes", GiB}, {"holders", {first.pid(), gate.pid()}}},
       {{"pid", number}, {"used_bytes", GiB}}})));
  pause_process(first.pid());
  TempDir dir;
  auto d = mode_daemon(GetParam(), dir, dev, nvml, R"(enforce = true
[[policy]]
name = "paused"
anomalies = ["stopped"]
after = "1s"
action = "terminate"
grace = "1s"
)",
                       Rescan::EverySample);
  ASSERT_EQ(end_signal(first.pid()), SIGTERM) << d->log();
  pause_process(number);
  ASSERT_TRUE(d->wait_log("policy paused: terminate PID " + std::to_string(number))) << d->log();

  job.kill_and_reap();
  const Newcomer taken(number, "trainer", dev.dev("nvidia0"));
  const pid_t newcomer = taken.pid;
  if (newcomer < 0) GTEST_SKIP() << "the kernel did not hand out PID " << number << " again";
  const uint64_t newcomer_start = start_ticks_of(newcomer);
  // The daemon sees the newcomer: as the holder it is, or as the process that has the number of
  // a listing still there (the driver's view may keep it a while).
  ASSERT_TRUE(wait_until([&] {
    json r = daemon_row(*d, number);
    return r.is_object() && (r["start_ticks"] == newcomer_start ||
                             (r["reused_by"].is_object() && r["reused_by"]["uid"] == kUserB));
  })) << d->log()
      << snapshot_of(*d).dump(2);
  ASSERT_TRUE(wait_new_samples(*d, 2)) << d->log();

  gate.kill_and_reap();
  auto records = wait_actions(dir, {first.pid(), number});
  ASSERT_TRUE(wait_new_samples(*d, 3)) << d->log();
  records = read_json_lines(dir.file("audit.jsonl"));
  EXPECT_EQ(trail(records), (Trail{{"decision", first.pid()},
                                   {"action", first.pid()},
                                   {"decision", number},
                                   {"action", number}}))
      << audit_text(dir);
  EXPECT_EQ(record_of(records, "action", number)["outcome"], "gone") << audit_text(dir);
  EXPECT_EQ(record_of(records, "action", first.pid())["outcome"], "released") << audit_text(dir);
  expect_untouched(newcomer, "user B's newcomer");
}

INSTANTIATE_TEST_SUITE_P(BothModes, NumberReusedWhileQueued, kBothModes, mode_test_name);

// --- a job's workers, a gone PID's bystanders, protected programs ---------------------------

// User A's paused trainer (paused alone, as `kill -STOP PID` does) with its two DataLoader
// workers, which share its open GPU file; a gone trainer whose worker keeps its context; user
// B's process holding the GPU's file, no kin of either; a leaked context nothing keeps.
struct LeftoverScene {
  FakeDevRoot dev;
  KillStrays strays;
  std::unique_ptr<Child> trainer, bystander;
  pid_t worker1 = 0, worker2 = 0, leaked = 0;
  std::unique_ptr<GoneTrainer> ghost;
  std::unique_ptr<FakeNvml> nvml;

  LeftoverScene() {
    Ready w1, w2, opened;
    trainer = std::make_unique<Child>([&] {
      hold(dev.dev("nvidia0"));
      become(kUserA);
      ::prctl(PR_SET_NAME, "python");
      block_all_signals();
      for (Ready* r : {&w1, &w2})
        if (::fork() == 0) {
          ::prctl(PR_SET_NAME, "pt_data_worker");
          r->send(::getpid());
          for (;;) ::pause();
        }
      opened.signal();
    });
    worker1 = static_cast<pid_t>(w1.receive());
    worker2 = static_cast<pid_t>(w2.receive());
    strays.pids = {worker1, worker2};
    opened.wait();
    pause_process(trainer->pid());
    ghost = gone_trainer(dev);
    bystander = std::make_unique<Child>(users_process(dev, kUserB, "monitor"));
    leaked = dead_pid();
    nvml = std::make_unique<FakeNvml>(gpu0(json::array(
        {{{"pid", trainer->pid()}, {"used_bytes", 8 * GiB}},
         {{"pid", ghost->trainer}, {"used_bytes", 6 * GiB}, {"holders", {ghost->worker}}},
         {{"pid", leaked}, {"used_bytes", GiB}, {"leaked", true}}})));
  }

  void expect_innocents_untouched() const {
    for (pid_t p : {trainer->pid(), worker1, worker2}) expect_untouched(p, "user A's paused job");
    expect_untouched(bystander->pid(), "user B's bystander");
    EXPECT_EQ(state_of(trainer->pid()), 'T');
  }
};

// A policy on leftovers ends the gone trainer's worker alone.
TEST(PolicyAttacks, ALeftoverPolicyReachesNoHealthyWorkerAndNoBystander) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root to run processes as two users";
  LeftoverScene s;
  TempDir dir;
  auto d = mode_daemon(Mode::Scans, dir, s.dev, *s.nvml, R"(enforce = true
[[policy]]
name = "leftovers"
anomalies = ["orphan", "inherited-holder"]
action = "kill"
)",
                       Rescan::EverySample);
  auto records = wait_actions(dir, {s.ghost->worker});
  ASSERT_TRUE(wait_new_samples(*d, 3)) << d->log();
  records = read_json_lines(dir.file("audit.jsonl"));
  EXPECT_EQ(trail(records), (Trail{{"decision", s.ghost->worker}, {"action", s.ghost->worker}}))
      << audit_text(dir);
  EXPECT_EQ(record_of(records, "action", s.ghost->worker)["outcome"], "released")
      << audit_text(dir);
  // A live process's action signalled that process alone.
  json signalled = record_of(records, "action", s.ghost->worker)["signalled"];
  ASSERT_EQ(signalled.size(), 1u) << audit_text(dir);
  EXPECT_EQ(signalled[0]["pid"], s.ghost->worker);
  EXPECT_EQ(signalled[0]["signals"], json::array({"SIGKILL"}));
  EXPECT_TRUE(wait_gone(s.ghost->worker)) << d->log();
  s.expect_innocents_untouched();
}

// A policy on gone PIDs ends the gone trainer through its worker, and its action record names
// the worker it signalled; the leaked context it refuses, since nothing keeps it.
TEST(PolicyAttacks, AGonePidPolicyEndsItsKeepersAloneAndNamesThem) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root to run processes as two users";
  LeftoverScene s;
  const uint64_t worker_start = start_ticks_of(s.ghost->worker);
  TempDir dir;
  auto d = mode_daemon(Mode::Scans, dir, s.dev, *s.nvml, R"(enforce = true
[[policy]]
name = "gone"
anomalies = ["no-such-process"]
min_memory = "512MiB"
action = "kill"
)",
                       Rescan::EverySample);
  auto records = wait_actions(dir, {s.ghost->trainer, s.leaked});
  ASSERT_TRUE(wait_new_samples(*d, 3)) << d->log();
  records = read_json_lines(dir.file("audit.jsonl"));
  EXPECT_EQ(trail(records), (Trail{{"decision", s.ghost->trainer},
                                   {"action", s.ghost->trainer},
                                   {"decision", s.leaked},
                                   {"action", s.leaked}}))
      << audit_text(dir);
  json ended = record_of(records, "action", s.ghost->trainer);
  EXPECT_EQ(ended["outcome"], "released") << audit_text(dir);
  EXPECT_EQ(ended["detail"], "its keepers were ended: PID " + std::to_string(s.ghost->worker) +
                                 " (loader-worker, user " + user_name_of(::geteuid()) + ")")
      << audit_text(dir);
  // The same, for programs: exactly the worker, pinned by its start time, and the one signal
  // it was sent. The refused leaked context and the decisions signalled nobody.
  EXPECT_EQ(ended["signalled"], json::array({{{"pid", s.ghost->worker},
                                              {"start_ticks", worker_start},
                                              {"comm", "loader-worker"},
                                              {"uid", ::geteuid()},
                                              {"user", user_name_of(::geteuid())},
                                              {"signals", json::array({"SIGKILL"})}}}))
      << audit_text(dir);
  for (const auto& r : records)
    if (r != ended) {
      EXPECT_EQ(r["signalled"], json::array()) << r.dump();
    }
  EXPECT_EQ(record_of(records, "action", s.leaked)["outcome"], "refused") << audit_text(dir);
  EXPECT_TRUE(wait_gone(s.ghost->worker)) << d->log();
  s.expect_innocents_untouched();
}

// A policy on every big GPU process: root's nvidia-persistenced, a system-installed program, is
// never reached; user B's process that calls itself nvidia-persistenced is no such program and
// is ended like any other.
TEST(PolicyAttacks, AProtectedNameProtectsOnlyTheSystemProgram) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root to install a system program";
  FakeDevRoot dev;
  auto daemon_program = run_system_program(dev, "nvidia0", "nvidia-persistenced", true);
  Child alike = users_process(dev, kUserB, "nvidia-persistenced");
  FakeNvml nvml(gpu0(json::array({{{"pid", daemon_program->pid()}, {"used_bytes", GiB}},
                                  {{"pid", alike.pid()}, {"used_bytes", GiB}}})));
  TempDir dir;
  auto d = mode_daemon(Mode::Scans, dir, dev, nvml, R"(enforce = true
[[policy]]
name = "big"
min_memory = "512MiB"
action = "kill"
)",
                       Rescan::EverySample);
  auto records = wait_actions(dir, {alike.pid()});
  ASSERT_TRUE(wait_new_samples(*d, 3)) << d->log();
  records = read_json_lines(dir.file("audit.jsonl"));
  EXPECT_EQ(trail(records), (Trail{{"decision", alike.pid()}, {"action", alike.pid()}}))
      << audit_text(dir);
  EXPECT_EQ(end_signal(alike.pid()), SIGKILL);
  expect_untouched(daemon_program->pid(), "root's nvidia-persistenced");
}

// --- a listing first seen after its holder ended ------------------------------------------

class ListingFirstSeenLate : public ::testing::TestWithParam<Mode> {};

// GPU 0 does not answer while user A's trainer holds its file, forks a worker and ends, and
// while user B's process takes the trainer's number and opens GPU 0's file. Once the GPU answers,
// it lists the number with the worker keeping its context. B's process is under the number at
// the daemon's first sighting, but a holder of that number ended since the GPU last answered,
// and the daemon saw it: B's process is not vouched for. It is a newcomer, charged nothing, and
// the worker keeps the trainer's context.
TEST_P(ListingFirstSeenLate, TheNumbersNewcomerIsNotTheListedProcess) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  FakeDevRoot dev;
  json lost = gpu0(json::array());
  lost["gpus"][0]["error"] = "gpu_lost";
  FakeNvml nvml(lost);
  TempDir dir;
  std::string skip;
  auto d = watching_daemon(GetParam(), dir, dev, nvml, "", skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  TrainerOfA trainer(dev);
  const pid_t gone = trainer.pid();
  ASSERT_TRUE(wait_until([&] {
    json t = row_of(snapshot_of(*d), gone);
    return t.is_object() && t["holds_device"] == true;
  })) << d->log();
  const pid_t worker = trainer.fork_worker();
  ASSERT_TRUE(wait_until([&] { return row_of(snapshot_of(*d), worker).is_object(); })) << d->log();
  trainer.end();
  const Newcomer taken(gone, "trainer", dev.dev("nvidia0"));
  const pid_t newcomer = taken.pid;
  if (newcomer < 0) GTEST_SKIP() << "the kernel did not hand out PID " << gone << " again";
  ASSERT_TRUE(wait_until([&] {
    json r = row_of(snapshot_of(*d), gone);
    return r.is_object() && r["start_ticks"] == start_ticks_of(newcomer);
  })) << d->log()
      << snapshot_of(*d).dump(2);

  replace_scenario(
      nvml, gpu0(json::array({{{"pid", gone}, {"used_bytes", 8 * GiB}, {"holders", {worker}}}})));
  ASSERT_TRUE(wait_until([&] { return daemon_row(*d, gone)["listed_by_driver"] == true; }))
      << d->log();
  json row = daemon_row(*d, gone);
  ASSERT_TRUE(row["reused_by"].is_object()) << snapshot_of(*d).dump(2);
  EXPECT_EQ(row["reused_by"]["uid"], kUserB) << row.dump(2);
  EXPECT_EQ(row["reused_by"]["why"], "started-after-listing") << row.dump(2);
  EXPECT_TRUE(row["start_ticks"].is_null()) << row.dump(2);
  ASSERT_TRUE(wait_until([&] {
    json w = daemon_row(*d, worker);
    return w.is_object() && w["keeps"] == json::array({gone});
  })) << snapshot_of(*d).dump(2);
}

INSTANTIATE_TEST_SUITE_P(BothModes, ListingFirstSeenLate, kBothModes, mode_test_name);

// --- one-shot commands beside the daemon ---------------------------------------------------

// User A's job is listed with 2 GiB and ends; its context stays listed (leaked), and user B's
// process takes the number and opens GPU 0's file. The daemon, which watched the listing since
// before B's process began, disowns it. set() says a failure or a skip the way gtest does.
struct NumberTakenBesideTheDaemon {
  NumberTakenBesideTheDaemon()
      : job(users_process(dev, kUserA, "trainer")),
        number(job.pid()),
        nvml(gpu0(json::array({{{"pid", number}, {"used_bytes", 2 * GiB}, {"leaked", true}}}))) {}

  // `while_down`: the daemon, once it saw the job end, is stopped before the number is taken.
  void set(Mode mode, bool while_down = false) {
    daemon = mode_daemon(mode, dir, dev, nvml, "", Rescan::EverySample);
    const uint64_t job_start = start_ticks_of(number);
    ASSERT_TRUE(wait_until([&] {
      json r = daemon_row(*daemon, number);
      return r.is_object() && r["listed_by_driver"] == true && r["start_ticks"] == job_start;
    })) << daemon->log();
    job.kill_and_reap();
    if (while_down) {
      // Seen gone: its row has no process any more.
      ASSERT_TRUE(wait_until([&] { return daemon_row(*daemon, number)["start_ticks"].is_null(); }))
          << daemon->log();
      // And the driver read since: what ended before that reading says nothing of who has the
      // number after it (core/listed_identity), only the listing the daemon saw does.
      ASSERT_TRUE(wait_new_samples(*daemon, 2)) << daemon->log();
      daemon->signal(SIGTERM);
      ASSERT_EQ(daemon->wait_exit(), 0) << daemon->log();
    }
    taken = std::make_unique<Newcomer>(number, "trainer", dev.dev("nvidia0"));
    newcomer = taken->pid;
    if (newcomer < 0) GTEST_SKIP() << "the kernel did not hand out PID " << number << " again";
    if (while_down) return;
    ASSERT_TRUE(wait_until([&] { return daemon_row(*daemon, number)["reused_by"].is_object(); }))
        << daemon->log() << snapshot_of(*daemon).dump(2);
  }

  // The environment of a command that asks the daemon.
  std::vector<std::string> client_env() const {
    std::vector<std::string> env = client_of(dir);
    for (const auto& e : nvml.env()) env.push_back(e);
    return env;
  }

  FakeDevRoot dev;
  Child job;
  const pid_t number;
  FakeNvml nvml;
  TempDir dir;
  std::unique_ptr<DaemonProcess> daemon;
  std::unique_ptr<Newcomer> taken;
  pid_t newcomer = -1;
};

class OneShotBesideTheDaemon : public ::testing::TestWithParam<Mode> {};

// User A's job is listed with 2 GiB and ends; its context stays listed (leaked), and user B's
// process takes the number and opens GPU 0's file. One look at /proc cannot tell B's process
// from the listed one, but the daemon has watched the listing since before B's process began:
// `kill`, `kill --ghosts` and `doctor --fix`, run with the daemon on the node, take its word
// (its sightings), and decide as its policies do. Nothing is signalled; the whole plan says so.
TEST_P(OneShotBesideTheDaemon, KillAndDoctorFixLeaveTheNewcomerAlone) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  NumberTakenBesideTheDaemon scene;
  scene.set(GetParam());
  if (HasFatalFailure() || IsSkipped()) return;
  const pid_t number = scene.number, newcomer = scene.newcomer;
  const std::vector<std::string> env = scene.client_env();
  const std::vector<std::string> roots{"--dev-root", scene.dev.path()};
  auto with_roots = [&](std::vector<std::string> args) {
    args.insert(args.end(), roots.begin(), roots.end());
    return args;
  };

  // By its number: the listing is a gone context, and B's process under it is refused.
  auto by_number =
      run_gpureap(with_roots({"kill", std::to_string(number), "--dry-run", "--json"}), env);
  json planned = parse_output(by_number);
  EXPECT_EQ(planned["plan"]["targets"], json::array()) << by_number.out << by_number.err;
  EXPECT_EQ(planned["summary"]["to_signal"], 0) << by_number.out;
  ASSERT_EQ(planned["plan"]["gone"].size(), 1u) << by_number.out;
  EXPECT_EQ(planned["plan"]["gone"][0]["pid"], number) << by_number.out;
  // No note offers the number back as if it named B's process.
  EXPECT_EQ(by_number.out.find("gpureap kill " + std::to_string(number) + "`"), std::string::npos)
      << by_number.out;

  // Every ghost: the gone listing, which nothing keeps; no target at all.
  auto ghosts = run_gpureap(with_roots({"kill", "--ghosts", "--yes", "--json"}), env);
  json reaped = parse_output(ghosts);
  EXPECT_EQ(reaped["plan"]["targets"], json::array()) << ghosts.out << ghosts.err;
  EXPECT_EQ(reaped["outcomes"], json::array()) << ghosts.out;
  ASSERT_EQ(reaped["plan"]["gone"].size(), 1u) << ghosts.out;
  EXPECT_EQ(reaped["plan"]["gone"][0]["pid"], number) << ghosts.out;
  EXPECT_EQ(reaped["plan"]["gone"][0]["keepers"], json::array()) << ghosts.out;

  auto fixed = run_gpureap(with_roots({"doctor", "--fix", "--yes", "--settle", "0s"}), env);
  EXPECT_NE(fixed.out.find("PID " + std::to_string(number) + " was reused"), std::string::npos)
      << fixed.out << fixed.err;
  EXPECT_NE(fixed.out.find("Nothing for --fix to do"), std::string::npos) << fixed.out;
  expect_untouched(newcomer, "user B's newcomer");
}

INSTANTIATE_TEST_SUITE_P(BothModes, OneShotBesideTheDaemon, kBothModes, mode_test_name);

class GoneNumberNamed : public ::testing::TestWithParam<Mode> {};

// Every process a document names as still holding a listing (`held_by`, at any depth).
std::set<pid_t> named_holders(const json& doc) {
  std::set<pid_t> out;
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items()) {
      if (key == "held_by" && value.is_array()) {
        for (const auto& h : value) {
          if (h.is_object() && h["pid"].is_number_integer()) out.insert(h["pid"].get<pid_t>());
        }
      }
      for (pid_t p : named_holders(value)) out.insert(p);
    }
  } else if (doc.is_array()) {
    for (const auto& v : doc)
      for (pid_t p : named_holders(v)) out.insert(p);
  }
  return out;
}

// User A's trainer forks a worker that inherits GPU 0's file and ends; user B's process takes
// the number and opens the file. Naming the gone PID ends A's worker, which kept its context,
// and the driver goes on listing it (leaked). What the report says still holds it must not be
// B's process, which is under the number but not the listed process: told to end it, a user
// would end an innocent process.
TEST_P(GoneNumberNamed, TheReportNamesNoNewcomerAsAHolder) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  FakeDevRoot dev;
  TrainerOfA trainer(dev);
  const pid_t number = trainer.pid();
  FakeNvml nvml(gpu0(json::array({{{"pid", number}, {"used_bytes", 2 * GiB}, {"leaked", true}}})));
  TempDir dir;
  auto d = mode_daemon(GetParam(), dir, dev, nvml, "", Rescan::EverySample);
  ASSERT_TRUE(wait_until([&] { return daemon_row(*d, number)["listed_by_driver"] == true; }))
      << d->log();
  const pid_t worker = trainer.fork_worker();
  ASSERT_TRUE(wait_until([&] { return daemon_row(*d, worker).is_object(); })) << d->log();
  trainer.end();
  const Newcomer taken(number, "trainer", dev.dev("nvidia0"));
  const pid_t newcomer = taken.pid;
  if (newcomer < 0) GTEST_SKIP() << "the kernel did not hand out PID " << number << " again";
  ASSERT_TRUE(wait_until([&] {
    return daemon_row(*d, number)["reused_by"].is_object() &&
           daemon_row(*d, worker)["keeps"] == json::array({number});
  })) << d->log()
      << snapshot_of(*d).dump(2);

  std::vector<std::string> env = client_of(dir);
  for (const auto& e : nvml.env()) env.push_back(e);
  auto r = run_gpureap({"kill", std::to_string(number), "--yes", "--wait-release", "300ms",
                        "--json", "--dev-root", dev.path()},
                       env);
  json doc = parse_output(r);
  ASSERT_EQ(doc["plan"]["targets"].size(), 1u) << r.out << r.err;
  EXPECT_EQ(doc["plan"]["targets"][0]["pid"], worker) << r.out;
  EXPECT_FALSE(is_alive(worker)) << r.out;
  EXPECT_EQ(named_holders(doc).count(newcomer), 0u) << r.out;
  expect_untouched(newcomer, "user B's newcomer");
}

INSTANTIATE_TEST_SUITE_P(BothModes, GoneNumberNamed, kBothModes, mode_test_name);

class ARestartedDaemon : public ::testing::TestWithParam<Mode> {};

// When the sightings file was last written (its boot ticks), 0 when it cannot be read.
uint64_t sightings_saved_at(const TempDir& dir) {
  try {
    return json::parse(read_text(dir.file("sightings.json")))["carried"]["saved_at_ticks"];
  } catch (const std::exception&) {
    return 0;
  }
}

// The daemon disowned user B's process, which took the number of A's gone job. Restarted (a
// stop, then a crash), it must not take B's process for the listed one at its first sighting:
// it takes on the last run's sightings from the file beside its socket, and so do the commands
// that ask it. Nothing is planned against B's process.
TEST_P(ARestartedDaemon, StillKnowsTheNewcomerUnderAGoneJobsNumber) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  NumberTakenBesideTheDaemon scene;
  scene.set(GetParam());
  if (HasFatalFailure() || IsSkipped()) return;
  const pid_t number = scene.number, newcomer = scene.newcomer;
  const TempDir& dir = scene.dir;
  auto& d = scene.daemon;

  // A stop writes the file; only the daemon's user may read or write it.
  d->signal(SIGTERM);
  ASSERT_EQ(d->wait_exit(), 0) << d->log();
  struct stat st {};
  ASSERT_EQ(::stat(dir.file("sightings.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());

  auto is_newcomer = [&](const DaemonProcess& daemon) {
    json row;
    EXPECT_TRUE(wait_until([&] {
      row = daemon_row(daemon, number);
      return row.is_object() && row["listed_by_driver"] == true;
    })) << daemon.log();
    EXPECT_TRUE(row["reused_by"].is_object()) << row.dump(2) << daemon.log();
    if (row["reused_by"].is_object()) {
      EXPECT_EQ(row["reused_by"]["uid"], kUserB) << row.dump(2);
    }
    EXPECT_NE(daemon.log().find("took on the last run's sightings"), std::string::npos)
        << daemon.log();
  };
  auto restarted = mode_daemon(GetParam(), dir, scene.dev, scene.nvml, "", Rescan::EverySample);
  is_newcomer(*restarted);

  // A command beside it decides as it does.
  auto ghosts = run_gpureap({"kill", "--ghosts", "--yes", "--json", "--dev-root", scene.dev.path()},
                            scene.client_env());
  json reaped = parse_output(ghosts);
  EXPECT_EQ(reaped["plan"]["targets"], json::array()) << ghosts.out << ghosts.err;
  EXPECT_EQ(reaped["outcomes"], json::array()) << ghosts.out;

  // A crash: the file the restarted run wrote (at its first collection) is the next run's.
  const uint64_t stopped_at = sightings_saved_at(dir);
  ASSERT_TRUE(wait_until([&] { return sightings_saved_at(dir) > stopped_at; })) << restarted->log();
  restarted->signal(SIGKILL);
  restarted->wait_exit();
  auto after_crash = mode_daemon(GetParam(), dir, scene.dev, scene.nvml, "", Rescan::EverySample);
  is_newcomer(*after_crash);
  expect_untouched(newcomer, "user B's newcomer");
}

// The number is taken while no daemon runs. Its next run cannot tell whether the listing ended
// and came back as the newcomer's own; it takes on the last run's word, which fails safe: the
// newcomer is disowned, never charged or planned (a policy that matches its memory would end it).
TEST_P(ARestartedDaemon, DisownsANumberTakenWhileItWasDown) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  NumberTakenBesideTheDaemon scene;
  scene.set(GetParam(), true);
  if (HasFatalFailure() || IsSkipped()) return;
  auto restarted =
      mode_daemon(GetParam(), scene.dir, scene.dev, scene.nvml,
                  "enforce = true\n[[policy]]\nname = \"hogs\"\nmin_memory = \"1GiB\"\n"
                  "action = \"terminate\"\n",
                  Rescan::EverySample);
  json row;
  ASSERT_TRUE(wait_until([&] {
    row = daemon_row(*restarted, scene.number);
    return row.is_object() && row["listed_by_driver"] == true;
  })) << restarted->log();
  EXPECT_TRUE(row["reused_by"].is_object()) << row.dump(2) << restarted->log();
  auto ghosts = run_gpureap({"kill", "--ghosts", "--yes", "--json", "--dev-root", scene.dev.path()},
                            scene.client_env());
  json reaped = parse_output(ghosts);
  EXPECT_EQ(reaped["plan"]["targets"], json::array()) << ghosts.out << ghosts.err;
  // The policy has seen a few samples (after = 0s): it matches the gone listing alone, whose
  // memory no live process keeps, and signals nothing.
  ASSERT_TRUE(wait_new_samples(*restarted, 3)) << restarted->log();
  auto policies = json::parse(restarted->get("/api/v1/policies").body, nullptr, false);
  ASSERT_TRUE(policies.contains("policies")) << policies.dump();
  const json matched = policies["policies"][0]["processes"];
  ASSERT_EQ(matched.size(), 1u) << policies.dump(2);
  EXPECT_EQ(matched[0]["pid"], scene.number) << policies.dump(2);
  EXPECT_TRUE(matched[0]["start_ticks"].is_null()) << policies.dump(2);
  for (const auto& r : read_json_lines(scene.dir.file("audit.jsonl"))) {
    EXPECT_TRUE(r["process"]["start_ticks"].is_null()) << r.dump();
    EXPECT_EQ(r["signalled"], json::array()) << r.dump();
  }
  expect_untouched(scene.newcomer, "user B's newcomer");
}

// The forks the last run saw are no kin of a listing it never saw. A's process, never listed,
// forks a worker that inherits GPU 0's file and ends; the daemon records the fork. While no
// daemon runs, B's process takes the number, opens the file, is listed and ends. The next run
// first sees that listing: it is not the context of A's process, which ended while the last run
// read the lists and saw no such listing, so A's worker keeps nothing and nothing is planned.
TEST_P(ARestartedDaemon, GrantsNoKinByAForkToAListingFirstSeenAfterIt) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  FakeDevRoot dev;
  FakeNvml nvml(gpu0(json::array()));
  TempDir dir;
  TrainerOfA parent(dev);
  const pid_t number = parent.pid();
  auto d = mode_daemon(GetParam(), dir, dev, nvml, "", Rescan::EverySample);
  ASSERT_TRUE(wait_until([&] { return daemon_row(*d, number).is_object(); })) << d->log();
  const pid_t worker = parent.fork_worker();
  ASSERT_TRUE(wait_until([&] { return daemon_row(*d, worker).is_object(); })) << d->log();
  parent.end();
  auto fork_saved = [&] {
    try {
      const json saved = json::parse(read_text(dir.file("sightings.json")));
      for (const auto& f : saved["carried"]["forks"])
        if (f[0] == worker && f[1]["parent"] == number) return true;
    } catch (const std::exception&) {
    }
    return false;
  };
  ASSERT_TRUE(wait_until(fork_saved)) << d->log() << read_text(dir.file("sightings.json"));

  d->signal(SIGTERM);
  ASSERT_EQ(d->wait_exit(), 0) << d->log();

  {
    Newcomer taken(number, "bjob", dev.dev("nvidia0"));
    if (taken.pid < 0) GTEST_SKIP() << "the kernel did not hand out PID " << number << " again";
    nvml.write(gpu0(json::array({{{"pid", number}, {"used_bytes", 2 * GiB}, {"leaked", true}}})));
  }  // B's process ends; its context stays listed

  auto restarted = mode_daemon(GetParam(), dir, dev, nvml, "", Rescan::EverySample);
  ASSERT_TRUE(wait_until([&] {
    return daemon_row(*restarted, number)["listed_by_driver"] == true;
  })) << restarted->log();
  json keeper = daemon_row(*restarted, worker);
  EXPECT_EQ(keeper["keeps"], json::array()) << keeper.dump(2);
  std::vector<std::string> env = client_of(dir);
  for (const auto& e : nvml.env()) env.push_back(e);
  for (const char* source : {"", "--no-daemon"}) {
    std::vector<std::string> args{"kill",   "--ghosts",   "--dry-run",
                                  "--json", "--dev-root", dev.path()};
    if (*source) args.push_back(source);
    auto ghosts = run_gpureap(args, env);
    json planned = parse_output(ghosts);
    EXPECT_EQ(planned["plan"]["targets"], json::array()) << source << ghosts.out << ghosts.err;
  }
  EXPECT_TRUE(is_alive(worker));
}

INSTANTIATE_TEST_SUITE_P(BothModes, ARestartedDaemon, kBothModes, mode_test_name);

}  // namespace policy_attacks
}  // namespace
}  // namespace gpureap::testing
