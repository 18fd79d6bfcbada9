// Two unprivileged users against the commands that decide whom to signal: user A's processes
// (the victim's) and user B's (the attacker's), with look-alikes (same program, same arguments,
// same working directory) and reused numbers. Each plan and each run's report is asserted whole:
// what is planned or ended, and that everything else is alive with no signal pending.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "daemon_modes.h"
#include "support.h"

namespace gpureap::testing {
namespace {
namespace two_users {

using nlohmann::json;

constexpr uid_t kUserA = 65533;
constexpr uid_t kUserB = 65534;

// In a child: becomes `uid` (group the same number, no supplementary groups), staying readable
// to its own user's gpureap (a process that changed its uid is not dumpable otherwise).
void become(uid_t uid) {
  if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(1);
  ::prctl(PR_SET_DUMPABLE, 1);
}

// In a child: blocks every signal (one sent stays pending, and shows) and runs `sleep 1000` in
// `cwd`: a look-alike of a job's leftover by every name a user can give a process.
[[noreturn]] void look_alike(uid_t uid, const std::string& cwd) {
  become(uid);
  if (::chdir(cwd.c_str()) != 0) ::_exit(1);
  block_all_signals();
  ::execlp("sleep", "sleep", "1000", static_cast<char*>(nullptr));
  ::_exit(127);
}

// Alive, and no signal was ever sent to it (it blocks them all: SIGKILL alone would end it).
void expect_untouched(pid_t pid, const std::string& who) {
  EXPECT_TRUE(is_alive(pid)) << who << " " << pid << " was ended";
  if (is_alive(pid)) {
    EXPECT_TRUE(no_signal_pending(pid)) << who << " " << pid << " was signalled";
  }
}

// A place both users may read and write, and a dev root both may read.
void open_to_everyone(const std::string& dir) {
  ::chmod(dir.c_str(), 01777);
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    ::chmod(e.path().c_str(), e.is_directory() ? 0755 : 0644);
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// It runs sleep(1) (its /proc/PID/exe), wherever the system installed it.
bool runs_sleep(pid_t pid) {
  return runs(pid, "/bin/sleep") || runs(pid, "/usr/bin/sleep");
}

bool can_run_as_others() {
  return ::geteuid() == 0;
}

// Whether `uid` can reach `path` (every directory above it): not where temporary directories
// live under one only root may enter.
bool reaches(uid_t uid, const std::string& path) {
  pid_t pid = ::fork();
  if (pid == 0) {
    become(uid);
    ::_exit(::access(path.c_str(), R_OK | X_OK) == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// User A's trainer that opened the GPU, forked a worker (which keeps its files) and was killed
// and reaped: its number is free, the worker ("loader-worker") lives on. `own_group`: the
// trainer led a process group of its own (the worker is in it).
struct GoneTrainer {
  pid_t gone = 0;
  pid_t worker = 0;
};
GoneTrainer gone_trainer(const FakeDevRoot& dev, KillStrays& strays, bool own_group) {
  Ready forked;
  Child trainer([&] {
    if (own_group) ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    become(kUserA);
    if (::fork() == 0) {
      ::prctl(PR_SET_NAME, "loader-worker");
      forked.send(::getpid());
      for (;;) ::pause();
    }
    ::_exit(0);
  });
  GoneTrainer out{trainer.pid(), static_cast<pid_t>(forked.receive())};
  strays.pids.push_back(out.worker);
  trainer.kill_and_reap();
  return out;
}

// --- gpureap run -----------------------------------------------------------------------------

// User A's `gpureap run` and then user B's, each with a job that leaves a worker behind. Beside
// them: A's look-alike of the worker started before the run (not the job's), and B's, in the
// same directory. Each run ends its own worker alone; the report lists exactly that worker.
TEST(TwoUsers, EachUsersRunEndsItsOwnLeftoverAndNoLookAlike) {
  if (!can_run_as_others()) GTEST_SKIP() << "needs root to run processes as two users";
  FakeDevRoot dev;
  TempDir work;
  open_to_everyone(dev.path());
  open_to_everyone(work.path());
  if (!reaches(kUserA, work.path()) || !reaches(kUserB, work.path()))
    GTEST_SKIP() << "uids " << kUserA << " and " << kUserB << " cannot reach " << work.path();
  KillStrays strays;
  Child a_alike([&] { look_alike(kUserA, work.path()); });
  Child b_alike([&] { look_alike(kUserB, work.path()); });
  ASSERT_TRUE(wait_until([&] { return runs_sleep(a_alike.pid()) && runs_sleep(b_alike.pid()); }));

  for (uid_t user : {kUserA, kUserB}) {
    const std::string name = user == kUserA ? "A" : "B";
    SCOPED_TRACE("user " + name);
    TempDir dir;
    open_to_everyone(dir.path());
    const std::string w = dir.file("worker");
    const std::string script = "cd " + work.path() + "; exec 3<" + dev.dev("nvidia0") +
                               "; sleep 1000 & echo $! > " + w + "; exit 0";
    auto r = run_gpureap_as(user, user,
                            {"--dev-root", dev.path(), "--nvml-library", kNoNvml, "run", "--report",
                             dir.file("report.json"), "--", "sh", "-c", script});
    ASSERT_TRUE(wait_for_file(w)) << r.err;
    const pid_t worker = static_cast<pid_t>(std::stol(read_text(w)));
    strays.pids.push_back(worker);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(wait_gone(worker)) << "user " << name << "'s worker outlived the run";
    auto report = report_of(dir);
    ASSERT_EQ(report["leftovers"].size(), 1u) << report.dump(2);
    EXPECT_EQ(report["leftovers"][0]["pid"], worker) << report.dump(2);
    EXPECT_EQ(report["leftovers"][0]["ended"], true) << report.dump(2);
    expect_untouched(a_alike.pid(), "user A's look-alike");
    expect_untouched(b_alike.pid(), "user B's look-alike");
  }
}

// --- gpureap kill --group ---------------------------------------------------------------------

// User A's trainer, which leads no group (a script started it), opens GPU 0's file, forks a
// worker that inherits it, and ends: its number is free. User B takes the number, makes a session
// (and so a process group) of it, leaves a process there and ends: group N lives on, no process
// is N. The driver still lists N. Neither user's `kill N --group` (nor root's), nor
// `--ghosts --group`, may take group N for the gone trainer's: it is B's.
TEST(TwoUsers, AGoneNumbersGroupThatAnotherUserMadeSinceIsNeverExpanded) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  FakeDevRoot dev;
  open_to_everyone(dev.path());
  KillStrays strays;
  // Plain names, not a structured binding: lambdas below capture them (clang 14 refuses that).
  const GoneTrainer trainer = gone_trainer(dev, strays, false);
  const pid_t gone = trainer.gone, worker = trainer.worker;

  Ready took;
  pid_t leader = fork_at(gone, [&] {
    become(kUserB);
    ::setsid();
    if (::fork() == 0) {
      ::prctl(PR_SET_NAME, "b-helper");
      block_all_signals();
      took.send(::getpid());
      for (;;) ::pause();
    }
    ::_exit(0);
  });
  if (leader < 0) GTEST_SKIP() << "the kernel did not hand out PID " << gone << " again";
  const pid_t b_member = static_cast<pid_t>(took.receive());
  strays.pids.push_back(b_member);
  ::waitpid(leader, nullptr, 0);
  ASSERT_FALSE(is_alive(gone));

  // Listed while a holder of its context lives, as the driver does.
  json listing = {{"pid", gone}, {"used_bytes", 8 * GiB}, {"holders", {worker}}};
  json gpu = {{"name", "NVIDIA H200"},
              {"uuid", "GPU-0000"},
              {"minor", 0},
              {"total_bytes", 80 * GiB},
              {"processes", json::array({listing})}};
  FakeNvml nvml(json{{"gpus", json::array({gpu})}});
  open_to_everyone(nvml.path());
  // The other users' gpureap loads the NVML test double from the build tree.
  std::vector<uid_t> callers{0};
  if (binary_runnable_as_nobody() && reaches(kUserA, nvml.path()) && reaches(kUserB, dev.path()))
    callers = {0, kUserA, kUserB};
  else
    std::cerr << "the build tree or the temporary directory is out of other users' reach: only "
                 "root's gpureap is asked\n";
  const std::vector<std::vector<std::string>> asks = {{std::to_string(gone), "--group"},
                                                      {"--ghosts", "--group"}};
  for (uid_t caller : callers) {
    for (const auto& ask : asks) {
      SCOPED_TRACE("caller uid " + std::to_string(caller) + ": kill " + ask[0] + " " + ask[1]);
      std::vector<std::string> args{"kill", "--json", "--dry-run", "--dev-root", dev.path()};
      args.insert(args.end(), ask.begin(), ask.end());
      auto r = caller == 0 ? run_gpureap(args, nvml.env())
                           : run_gpureap_as(caller, caller, args, nvml.env());
      auto doc = parse_output(r);
      auto planned = planned_pids(doc);
      ASSERT_EQ(doc["backend"]["available"], true) << r.err;
      // The whole plan: nothing. One scan does not tie A's worker to the gone trainer (its
      // parent is init, its group and session are not the trainer's), and group N is B's.
      EXPECT_EQ(planned, std::vector<pid_t>{})
          << "user B's process " << b_member << " is in group " << gone << ": " << doc.dump(2);
      bool told = false;
      for (const auto& note : doc["plan"]["notes"])
        told = told || note.get<std::string>().find("process group " + std::to_string(gone) +
                                                    " was not expanded") != std::string::npos;
      EXPECT_TRUE(told) << doc.dump(2);
    }
  }
  expect_untouched(b_member, "user B's group member");
  EXPECT_TRUE(is_alive(worker));
}

// --- gpureap kill as user B, every selector ---------------------------------------------------

// What user B's `kill --dry-run` plans: each target's PID and action.
std::map<pid_t, std::string> plan_actions(const json& doc) {
  std::map<pid_t, std::string> out;
  for (const auto& t : doc["plan"]["targets"]) out[t["pid"].get<pid_t>()] = t["action"];
  return out;
}

// User A has a job the driver lists on GPU 0, a paused one listed on GPU 1, and a gone trainer
// listed on GPU 0 whose worker keeps its context. User B asks `gpureap kill` with every selector,
// alone and filtered. Every process of A that a plan names is "not-permitted", with why; nothing
// else is planned; and B's own --user alone plans nothing.
TEST(TwoUsers, AnotherUsersKillPlansNoneOfAUsersProcessesForSignalling) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root to run processes as two users";
  if (!binary_runnable_as_nobody()) GTEST_SKIP() << "nobody cannot reach the build tree here";
  FakeDevRoot dev;
  open_to_everyone(dev.path());
  if (!reaches(kUserB, dev.path()))
    GTEST_SKIP() << "uid " << kUserB << " cannot reach " << dev.path();
  auto a_process = [&](const std::string& device, bool stop) {
    Ready ready;
    Child c([&, device] {
      hold(dev.dev(device));
      become(kUserA);
      block_all_signals();
      ready.signal();
    });
    ready.wait();
    if (stop) {
      ::kill(c.pid(), SIGSTOP);
      EXPECT_TRUE(wait_for_state(c.pid(), 'T'));
    }
    return c;
  };
  Child job = a_process("nvidia0", false);
  Child paused = a_process("nvidia1", true);
  Ready forked;
  Child trainer([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    become(kUserA);
    if (::fork() == 0) {
      block_all_signals();
      forked.send(::getpid());
      for (;;) ::pause();
    }
    ::_exit(0);
  });
  const pid_t gone = trainer.pid();
  const pid_t keeper = static_cast<pid_t>(forked.receive());
  KillStrays strays{{keeper}};
  trainer.kill_and_reap();

  json scenario = idle_gpus();
  scenario["gpus"][0]["processes"] =
      json::array({json{{"pid", job.pid()}, {"used_bytes", 4 * GiB}},
                   json{{"pid", gone}, {"used_bytes", 8 * GiB}, {"holders", {keeper}}}});
  scenario["gpus"][1]["processes"] =
      json::array({json{{"pid", paused.pid()}, {"used_bytes", 2 * GiB}}});
  FakeNvml nvml(scenario);
  open_to_everyone(nvml.path());

  const std::string a = std::to_string(kUserA), b = std::to_string(kUserB);
  const std::string j = std::to_string(job.pid()), g = std::to_string(gone);
  using Asks = std::vector<std::pair<std::vector<std::string>, std::vector<pid_t>>>;
  const Asks asks = {
      {{"--gpu", "0"}, {job.pid()}},
      {{"--gpu", "1"}, {paused.pid()}},
      {{"--ghosts"}, {}},
      {{"--ghosts", "--group"}, {}},
      {{"--ghosts", "--tree"}, {}},
      {{"--stopped"}, {paused.pid()}},
      {{"--stopped", "--gpu", "0"}, {}},
      {{"--user", a}, {job.pid(), paused.pid()}},
      {{"--user", b}, {}},
      {{"--gpu", "0", "--user", b}, {}},
      {{"--stopped", "--user", a}, {paused.pid()}},
      {{j, "--tree"}, {job.pid()}},
      {{j, "--group"}, {job.pid()}},
      {{g}, {}},
      {{g, "--group"}, {}},
  };
  for (const auto& [ask, expected] : asks) {
    std::string words;
    for (const auto& w : ask) words += " " + w;
    SCOPED_TRACE("user B: gpureap kill" + words);
    std::vector<std::string> args{"kill", "--json", "--dry-run", "--dev-root", dev.path()};
    args.insert(args.end(), ask.begin(), ask.end());
    auto r = run_gpureap_as(kUserB, kUserB, args, nvml.env());
    auto doc = parse_output(r);
    ASSERT_EQ(doc["backend"]["available"], true) << r.err;
    auto actions = plan_actions(doc);
    std::vector<pid_t> planned;
    for (const auto& [pid, action] : actions) planned.push_back(pid);
    EXPECT_EQ(planned, sorted(expected)) << doc.dump(2);
    for (const auto& t : doc["plan"]["targets"]) {
      EXPECT_EQ(t["action"], "not-permitted") << t.dump(2);
      EXPECT_NE(t.value("refusal", "").find("only root or its owner may signal it"),
                std::string::npos)
          << t.dump(2);
    }
  }
  for (pid_t p : {job.pid(), paused.pid(), keeper}) {
    EXPECT_TRUE(is_alive(p)) << p;
    EXPECT_TRUE(no_signal_pending(p)) << p;
  }
  EXPECT_EQ(state_of(paused.pid()), 'T');
}

// --- doctor answered from the daemon ---------------------------------------------------------

// User A's trainer leads its job's group, opens GPU 0's file, forks a worker that inherits it,
// and ends: the worker keeps its context, which the driver lists under the gone trainer. A
// daemon that samples once an hour sees the worker keep it, and doctor's finding names it as the
// keeper its remedy ends. The worker ends and user B's process takes its number; the
// driver's view does not move. doctor, asked then, must not hand out advice for that number: it
// names B's process now.
void stale_advice_scene(Mode mode) {
  FakeDevRoot dev;
  KillStrays strays;
  // Plain names, not a structured binding: lambdas below capture them (clang 14 refuses that).
  const GoneTrainer trainer = gone_trainer(dev, strays, true);
  const pid_t gone = trainer.gone, worker = trainer.worker;
  // Leaked: listed whatever ends, so that nothing below moves the driver's view.
  json listing = {{"pid", gone}, {"used_bytes", 8 * GiB}, {"leaked", true}};
  json scenario = idle_gpus();
  scenario["gpus"][0]["processes"] = json::array({listing});
  FakeNvml nvml(scenario);
  // Samples an hour apart, after the first: its answer is as old as the scene below.
  TempDir dir;
  std::ofstream(dir.file("config.toml"))
      << "interval = \"1h\"\nholder_scan_interval = \"1h\"\nfull_scan_interval = \"1h\"\n"
      << "holder_events = " << (mode == Mode::Events ? "true" : "false") << "\nlocal_socket = \""
      << dir.file("gpureap.sock") << "\"\n";
  auto d = std::make_unique<DaemonProcess>(
      std::vector<std::string>{"--config", dir.file("config.toml"), "--dev-root", dev.path()},
      nvml.env());
  ASSERT_TRUE(d->wait_log(kServingLocalSocket + dir.file("gpureap.sock"))) << d->log();

  auto advice_names = [&](const json& doc, pid_t pid) {
    for (const auto& f : doc["findings"]) {
      for (const auto& p : f["pids"])
        if (p == pid) return true;
      if (f["remedy"].dump().find("gpureap kill " + std::to_string(pid)) != std::string::npos)
        return true;
    }
    return false;
  };
  RunResult r;
  auto served = [&] {
    // No root option (--dev-root): the daemon answers with its own.
    r = run_gpureap({"doctor", "--json", "--settle", "0s"}, concat(nvml.env(), client_of(dir)));
    return parse_output(r);
  };
  json doc;
  ASSERT_TRUE(wait_until([&] {
    doc = served();
    return doc["source"]["kind"] == "daemon" && advice_names(doc, worker);
  })) << d->log()
      << doc.dump(2);

  strays.pids.kill_all();
  ASSERT_TRUE(wait_gone(worker));
  pid_t newcomer = fork_at(worker, [&] { look_alike(kUserB, "/"); });
  if (newcomer < 0) GTEST_SKIP() << "the kernel did not hand out PID " << worker << " again";
  struct Reap {
    pid_t pid;
    ~Reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{newcomer};
  ASSERT_TRUE(wait_until([&] { return runs_sleep(newcomer); }));

  doc = served();
  EXPECT_FALSE(advice_names(doc, worker))
      << "doctor advises on PID " << worker << ", which is user B's process now: " << doc.dump(2)
      << "\n"
      << r.err;
  // The daemon that only scans knows nothing of it: doctor says why it answers itself.
  if (mode == Mode::Scans) {
    EXPECT_NE(r.err.find("PID " + std::to_string(worker) +
                         " (loader-worker) has ended since the "
                         "daemon's sample, and its number is another process's now"),
              std::string::npos)
        << r.err;
  }
  expect_untouched(newcomer, "user B's newcomer");
}

TEST(TwoUsers, DoctorFromTheDaemonNeverAdvisesOnANumberAnotherProcessHasNow) {
  REQUIRE_DOUBLE();
  if (!can_run_as_others()) GTEST_SKIP() << "needs root for two users and ns_last_pid";
  // User B's newcomer runs sleep(1) from /: not where / is open to root alone (a chroot's).
  if (!reaches(kUserB, "/") ||
      !(reaches(kUserB, "/bin/sleep") || reaches(kUserB, "/usr/bin/sleep")))
    GTEST_SKIP() << "uid " << kUserB << " cannot run sleep here";
  for (Mode m : {Mode::Scans, Mode::Events}) {
    SCOPED_TRACE(name_of(m));
    stale_advice_scene(m);
    if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace two_users
}  // namespace
}  // namespace gpureap::testing
