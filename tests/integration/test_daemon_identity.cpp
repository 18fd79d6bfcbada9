// What the daemon decides on is the kernel's word, read again before it counts. One thread's exit
// is not its process's: a parent whose non-main thread exec()s, or whose main thread
// pthread_exit()s, still runs its child, which is no orphan, and a dead-job policy ends nothing.
// A job killed while the daemon follows events is read at its exit as a zombie; once its
// parent reaps it, the very next sample says its listed PID is gone, in the events mode as in
// the scan mode (in_both_modes runs one scene through each and compares doctor's findings).
// Real processes, a stand-in dev root and the NVML test double; scans an hour apart, so what
// the daemon sees between them it saw through events or its re-reads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
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

using nlohmann::json;

// One GPU (minor 0, the dev root's nvidia0) listing `processes`.
json identity_scenario(const json& processes) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-ident-0"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes", processes}}}}};
}

bool holds(const DaemonProcess& d, pid_t pid) {
  auto row = row_of(snapshot_of(d), pid);
  return !row.is_null() && row.value("holds_device", false);
}

// --- one thread's exit is not the process's --------------------------------------------------

// A job whose leader is gone, with its work running on: the leader (listed by the driver) led
// its session and group, forked a runner (a subreaper, holding nothing) and ended. Under the
// runner, a parent opens the GPU file and forks a child that inherits it: the two keep the
// gone leader's context (its group's members: its kin), and their parents live in that group,
// so neither is an orphan by /proc. The test then ends the parent's leader thread while the
// process runs on (`leader_ends`, on the parent's main thread): were that exit taken for the
// parent's end, the child would be an orphan.
struct ThreadExitScene {
  FakeDevRoot dev;
  int go[2] = {-1, -1};
  Ready opened, forked, after;
  pid_t leader = 0, runner = 0, parent = 0, child = 0;
  std::unique_ptr<FakeNvml> nvml;
  KillStrays strays;

  explicit ThreadExitScene(void (*leader_ends)(ThreadExitScene&)) {
    if (::pipe(go) != 0) throw std::runtime_error("pipe");
    Child job([this, leader_ends] {
      ::setsid();
      if (::fork() == 0) {
        ::prctl(PR_SET_CHILD_SUBREAPER, 1);
        if (::fork() == 0) {
          hold(dev.dev("nvidia0"));  // not close-on-exec: an exec keeps it
          opened.send(::getppid());
          opened.send(::getpid());
          await();
          pid_t c = ::fork();
          if (c == 0)
            for (;;) ::pause();
          forked.send(c);
          await();
          leader_ends(*this);
          ::_exit(1);
        }
        for (;;) ::pause();
      }
      ::_exit(0);
    });
    leader = job.pid();
    runner = static_cast<pid_t>(opened.receive());
    parent = static_cast<pid_t>(opened.receive());
    job.kill_and_reap();  // the leader is gone; its group lives on
    strays.pids.push_back(parent);
    // The NVML double lists the leader while the runner lives (it reads a parent whose leader
    // thread ended as a zombie).
    nvml = std::make_unique<FakeNvml>(identity_scenario(
        json::array({{{"pid", leader}, {"used_bytes", 4 * GiB}, {"holders", {runner}}}})));
  }
  ~ThreadExitScene() {
    // The whole group (a parent whose leader thread ended reads as a zombie, which KillStrays
    // would spare): its number stays the group's while a member lives.
    ::kill(-leader, SIGKILL);
    for (int fd : go) ::close(fd);
  }
  // In the parent: waits for the test's word.
  void await() {
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(1);
  }
  void tell() { ASSERT_EQ(::write(go[1], "x", 1), 1); }

  // The daemon sees the parent hold, then follows its fork: the child is a holder by events.
  void fork_child(const DaemonProcess& d) {
    ASSERT_TRUE(wait_until([&] { return holds(d, parent); })) << d.log();
    tell();
    child = static_cast<pid_t>(forked.receive());
    strays.pids.push_back(child);
    ASSERT_TRUE(wait_until([&] { return holds(d, child); })) << d.log();
  }
};

void* exec_sleep_thread(void*) {
  ::execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
  ::_exit(127);
}

// A thread other than the leader exec()s sleep: the process runs on under its PID.
void exec_from_thread(ThreadExitScene&) {
  pthread_t t;
  if (::pthread_create(&t, nullptr, exec_sleep_thread, nullptr) != 0) ::_exit(1);
  for (;;) ::pause();
}

ThreadExitScene* g_scene = nullptr;  // in the parent: for its thread
pid_t g_leader = 0;

void* fork_once_leader_ended(void*) {
  // Once the leader is dead (its exit reported), a fork the daemon follows: the exit's event
  // came before the fork's on the same socket, so once the daemon shows the new child the exit
  // was read.
  const std::string stat =
      "/proc/" + std::to_string(g_leader) + "/task/" + std::to_string(g_leader) + "/stat";
  for (;;) {
    std::ifstream in(stat);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z') break;
    ::usleep(1000);
  }
  pid_t c = ::fork();
  if (c == 0)
    for (;;) ::pause();
  g_scene->after.send(c);
  for (;;) ::pause();
}

// The leader ends its own thread, as pthread_exit() does (the bare system call: pthread_exit()
// would unwind this forked copy of the test program through the test framework's frames).
void leader_thread_exit(ThreadExitScene& sc) {
  g_scene = &sc;
  g_leader = ::getpid();
  pthread_t t;
  if (::pthread_create(&t, nullptr, fork_once_leader_ended, nullptr) != 0) ::_exit(1);
  ::syscall(SYS_exit, 0);
}

// The dead-job policy of the README, on orphans alone: it must match nothing here.
const std::string kDeadJobPolicy = R"(
[[policy]]
name = "dead-job"
anomalies = ["orphan"]
after = "0s"
action = "terminate"
grace = "1s"
)";

// Through the daemon: the child is no orphan, and the policy matches, plans and does nothing.
void expect_no_orphan_and_no_plan(const DaemonProcess& d, const TempDir& dir,
                                  const ThreadExitScene& sc) {
  ASSERT_TRUE(wait_new_samples(d, 3)) << d.log();  // the policy has seen them (after = 0s)
  auto ps = run_gpureap({"ps", "--json"}, client_of(dir));
  auto doc = parse_output(ps);
  EXPECT_EQ(doc["source"]["kind"], "daemon") << ps.out << ps.err;
  auto row = row_of(doc, sc.child);
  ASSERT_FALSE(row.is_null()) << ps.out;
  const auto a = anomalies(row);
  EXPECT_EQ(std::count(a.begin(), a.end(), "orphan"), 0) << row.dump(2);
  auto policies = json::parse(d.get("/api/v1/policies").body, nullptr, false);
  ASSERT_TRUE(policies.contains("policies")) << policies.dump();
  ASSERT_EQ(policies["policies"].size(), 1u) << policies.dump(2);
  EXPECT_EQ(policies["policies"][0]["matching"], 0) << policies.dump(2);
  EXPECT_EQ(policies["policies"][0]["processes"], json::array()) << policies.dump(2);
  EXPECT_EQ(read_json_lines(dir.file("audit.jsonl")), std::vector<json>{})
      << read_text(dir.file("audit.jsonl"));
  EXPECT_TRUE(is_alive(sc.child));
  // The kernel would have handed the child to a reaper had its parent ended.
  EXPECT_EQ(parent_of(sc.child), sc.parent);
}

class DaemonThreadExit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the kernel's events need root";
  }
  // Skips where the daemon cannot follow forks (the proc connector).
  bool follows_forks(const DaemonProcess& d) {
    return d.log().find("forks through the proc connector") != std::string::npos;
  }
};

TEST_F(DaemonThreadExit, AParentWhoseThreadExecsStillRunsItsChild) {
  REQUIRE_DOUBLE();
  ThreadExitScene sc(exec_from_thread);
  TempDir dir;
  auto d = mode_daemon(Mode::Events, dir, sc.dev, *sc.nvml, kDeadJobPolicy);
  if (!follows_forks(*d)) GTEST_SKIP() << "the daemon cannot follow forks here: " << d->log();
  sc.fork_child(*d);
  sc.tell();
  // The kernel reported the parent's leader exiting; the daemon read the parent again.
  ASSERT_TRUE(wait_until([&] { return row_of(snapshot_of(*d), sc.parent)["comm"] == "sleep"; }))
      << snapshot_of(*d).dump(1);
  expect_no_orphan_and_no_plan(*d, dir, sc);
}

TEST_F(DaemonThreadExit, AParentWhoseMainThreadExitsStillRunsItsChild) {
  REQUIRE_DOUBLE();
  ThreadExitScene sc(leader_thread_exit);
  TempDir dir;
  auto d = mode_daemon(Mode::Events, dir, sc.dev, *sc.nvml, "enforce = true\n" + kDeadJobPolicy);
  if (!follows_forks(*d)) GTEST_SKIP() << "the daemon cannot follow forks here: " << d->log();
  sc.fork_child(*d);
  sc.tell();
  const auto late = static_cast<pid_t>(sc.after.receive());
  sc.strays.pids.push_back(late);
  // Forked by the parent after its leader's exit: followed only when that exit was not taken
  // for the process's end.
  ASSERT_TRUE(wait_until([&] { return holds(*d, late); })) << d->log();
  expect_no_orphan_and_no_plan(*d, dir, sc);
}

// --- the same answers in both modes ---------------------------------------------------------

// Doctor's findings through the daemon: each finding's codes and PIDs, the PIDs named by their
// role in the scene (so that two runs of a scene, with other PIDs, compare).
struct Answers {
  std::set<std::string> findings;
  int doctor_exit = -1;
  bool ghost_in_metrics = false;  // /metrics counts the gone PID as a ghost
  bool operator==(const Answers&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Answers& a) {
  out << "doctor exit " << a.doctor_exit << ", ghost in /metrics " << a.ghost_in_metrics << ":";
  for (const auto& f : a.findings) out << "\n  " << f;
  return out;
}

std::string role_of(pid_t pid, const std::map<pid_t, std::string>& roles) {
  auto it = roles.find(pid);
  return it == roles.end() ? "other" : it->second;
}

// Doctor's exit and findings, from what `doctor --json` printed.
void read_doctor(const RunResult& r, const std::map<pid_t, std::string>& roles, Answers& a) {
  a.doctor_exit = r.exit_code;
  auto doc = parse_output(r);
  for (const auto& f : doc["findings"]) {
    std::string line = f.value("code", "?") + ":";
    for (const auto& pid : f["pids"]) line += " " + role_of(pid.get<pid_t>(), roles);
    for (const auto& x : f["facets"])
      line += " [" + x.value("code", "?") + " " +
              (x["pid"].is_number() ? role_of(x["pid"].get<pid_t>(), roles) : "-") + "]";
    a.findings.insert(line);
  }
}

// `doctor --json --settle 0s` through the daemon (with `only`, its --only), and /metrics.
Answers answers_of(const DaemonProcess& d, const TempDir& dir,
                   const std::map<pid_t, std::string>& roles, pid_t gone,
                   const std::string& only = "") {
  Answers a;
  std::vector<std::string> args{"doctor", "--json", "--settle", "0s"};
  if (!only.empty()) args.insert(args.end(), {"--only", only});
  auto r = run_gpureap(args, client_of(dir));
  EXPECT_EQ(parse_output(r)["source"]["kind"], "daemon") << r.out << r.err;
  read_doctor(r, roles, a);
  const std::string metrics = d.get("/metrics").body;
  std::istringstream lines(metrics);
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("gpureap_problem_process_memory_bytes{", 0) == 0 &&
        l.find("pid=\"" + std::to_string(gone) + "\"") != std::string::npos &&
        l.find("problem=\"ghost\"") != std::string::npos)
      a.ghost_in_metrics = true;
  return a;
}

// Runs `scene` once through a daemon in each mode (a fresh machine each time) and returns
// what each answered; the caller compares them with what it expects.
template <class Scene>
std::map<Mode, Answers> in_both_modes(Scene scene) {
  std::map<Mode, Answers> out;
  for (Mode m : {Mode::Events, Mode::Scans}) {
    SCOPED_TRACE(name_of(m));
    out[m] = scene(m);
  }
  return out;
}

// A trainer holding GPU 0's file (leading a group of its own, or not) with a worker that
// inherited it, forked before any daemon starts; the driver lists the trainer while either
// lives.
struct TrainerAndWorker {
  FakeDevRoot dev;
  KillStrays strays;
  pid_t trainer = 0, worker = 0;
  std::unique_ptr<FakeNvml> nvml;

  explicit TrainerAndWorker(bool leads_group) {
    Ready ready;
    trainer = ::fork();
    if (trainer == 0) {
      if (leads_group) ::setpgid(0, 0);
      hold(dev.dev("nvidia0"));
      pid_t w = ::fork();
      if (w == 0)
        for (;;) ::pause();
      ready.send(w);
      for (;;) ::pause();
    }
    strays.pids.push_back(trainer);
    worker = static_cast<pid_t>(ready.receive());
    strays.pids.push_back(worker);
    nvml = std::make_unique<FakeNvml>(identity_scenario(json::array(
        {{{"pid", trainer}, {"used_bytes", 8 * GiB}, {"holders", {trainer, worker}}}})));
  }
  // The trainer was reaped: its number is not to be killed again.
  void reaped() { strays.pids.erase(strays.pids.begin()); }
};

// A trainer listed by the driver, in a group of its own, with a worker that inherited its GPU
// file. The trainer is SIGKILLed; the test (its parent) reaps it only after the daemon has
// read it as a zombie. The next sample must say the trainer's PID is gone.
Answers killed_trainer_scene(Mode mode) {
  TrainerAndWorker sc(true);
  FakeDevRoot& dev = sc.dev;
  FakeNvml& nvml = *sc.nvml;
  const pid_t trainer = sc.trainer, worker = sc.worker;
  TempDir dir;
  auto d = mode_daemon(mode, dir, dev, nvml);
  const std::map<pid_t, std::string> roles{{trainer, "trainer"}, {worker, "worker"}};
  EXPECT_TRUE(wait_until([&] { return holds(*d, trainer) && holds(*d, worker); })) << d->log();
  EXPECT_EQ(answers_of(*d, dir, roles, trainer, "no-such-process").doctor_exit, 0);

  ::kill(trainer, SIGKILL);
  EXPECT_TRUE(wait_for_state(trainer, 'Z'));
  // The daemon reads it once as what it is now: a zombie, which holds nothing, so its listing
  // is a gone one already.
  EXPECT_TRUE(wait_until([&] { return row_of(snapshot_of(*d), trainer)["in_proc"] == false; }))
      << row_of(snapshot_of(*d), trainer).dump(1);
  EXPECT_EQ(::waitpid(trainer, nullptr, 0), trainer);  // reaped: the PID is gone
  sc.reaped();
  // The next sample that began after the reap.
  EXPECT_TRUE(wait_new_samples(*d, 2)) << d->log();
  Answers only = answers_of(*d, dir, roles, trainer, "no-such-process");
  EXPECT_EQ(only.doctor_exit, 2) << only;  // critical
  EXPECT_TRUE(only.ghost_in_metrics) << d->get("/metrics").body;
  EXPECT_TRUE(std::any_of(only.findings.begin(), only.findings.end(), [](const std::string& f) {
    return f.rfind("no-such-process: trainer", 0) == 0;
  })) << only;
  auto row = row_of(snapshot_of(*d), trainer);
  EXPECT_TRUE(row["state"].is_null()) << "not the gone PID's row: " << row.dump(1);
  return answers_of(*d, dir, roles, trainer);
}

TEST(DaemonModes, AKilledTrainerReapedAfterADaemonReadIsGoneAtTheNextSampleInBothModes) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the kernel's events need root";
  auto answers = in_both_modes(killed_trainer_scene);
  EXPECT_EQ(answers[Mode::Events], answers[Mode::Scans])
      << "events: " << answers[Mode::Events] << "\nscans: " << answers[Mode::Scans];
}

// A thread-exit scene through a daemon in `mode` (the scans daemon reads /proc at every sample:
// the driver does not see these scenes change), then the one-shot doctor on the same machine.
// Returns the daemon's answer and the one-shot's; `skipped` where events cannot follow forks.
std::pair<Answers, Answers> thread_exit_answers(void (*leader_ends)(ThreadExitScene&), Mode mode,
                                                bool& skipped) {
  ThreadExitScene sc(leader_ends);
  TempDir dir;
  auto d = mode_daemon(mode, dir, sc.dev, *sc.nvml, kDeadJobPolicy, Rescan::EverySample);
  if (mode == Mode::Events &&
      d->log().find("forks through the proc connector") == std::string::npos) {
    skipped = true;
    return {};
  }
  sc.fork_child(*d);
  sc.tell();
  std::map<pid_t, std::string> roles{
      {sc.leader, "leader"}, {sc.runner, "runner"}, {sc.parent, "parent"}, {sc.child, "child"}};
  if (leader_ends == exec_from_thread) {
    EXPECT_TRUE(wait_until([&] { return row_of(snapshot_of(*d), sc.parent)["comm"] == "sleep"; }))
        << snapshot_of(*d).dump(1);
  } else {
    const auto late = static_cast<pid_t>(sc.after.receive());
    sc.strays.pids.push_back(late);
    roles[late] = "late";
    EXPECT_TRUE(wait_until([&] { return holds(*d, late); })) << d->log();
  }
  expect_no_orphan_and_no_plan(*d, dir, sc);
  Answers served = answers_of(*d, dir, roles, sc.leader);
  Answers one_shot;
  read_doctor(run_gpureap({"doctor", "--no-daemon", "--json", "--settle", "0s", "--dev-root",
                           sc.dev.path()},
                          sc.nvml->env()),
              roles, one_shot);
  one_shot.ghost_in_metrics = served.ghost_in_metrics;  // the one-shot serves no /metrics
  return {served, one_shot};
}

void expect_one_answer_in_both_modes(void (*leader_ends)(ThreadExitScene&)) {
  bool skipped = false;
  for (Mode m : {Mode::Events, Mode::Scans}) {
    SCOPED_TRACE(name_of(m));
    auto [served, one_shot] = thread_exit_answers(leader_ends, m, skipped);
    if (skipped) GTEST_SKIP() << "the daemon cannot follow forks here";
    EXPECT_EQ(served, one_shot) << "daemon: " << served << "\none-shot: " << one_shot;
    // The gone leader's context is kept by its group, on the kernel's word.
    EXPECT_TRUE(std::any_of(served.findings.begin(), served.findings.end(),
                            [](const std::string& f) {
                              return f.rfind("no-such-process: leader", 0) == 0 &&
                                     f.find(" parent") != std::string::npos &&
                                     f.find(" child") != std::string::npos;
                            }))
        << served;
  }
}

TEST(DaemonModes, AParentWhoseThreadExecsGetsTheOneShotsAnswerInBothModes) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the kernel's events need root";
  expect_one_answer_in_both_modes(exec_from_thread);
}

TEST(DaemonModes, AParentWhoseMainThreadExitsGetsTheOneShotsAnswerInBothModes) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the kernel's events need root";
  expect_one_answer_in_both_modes(leader_thread_exit);
}

// A trainer that leads no group forked its worker before the daemon started, so no fork event
// ties them; the daemon reads the worker's parent in /proc while both live, and once the
// trainer ends, the worker keeps its context in both modes (no number vouches for it).
Answers worker_forked_before_the_daemon(Mode mode) {
  TrainerAndWorker sc(false);
  FakeDevRoot& dev = sc.dev;
  FakeNvml& nvml = *sc.nvml;
  const pid_t trainer = sc.trainer, worker = sc.worker;
  TempDir dir;
  auto d = mode_daemon(mode, dir, dev, nvml, "", Rescan::EverySample);
  EXPECT_TRUE(wait_until([&] { return holds(*d, trainer) && holds(*d, worker); })) << d->log();
  ::kill(trainer, SIGKILL);
  EXPECT_EQ(::waitpid(trainer, nullptr, 0), trainer);
  sc.reaped();
  EXPECT_TRUE(wait_until([&] {
    return row_of(snapshot_of(*d), trainer)["ghost"]["keepers"] == json::array({worker});
  })) << row_of(snapshot_of(*d), trainer).dump(1);
  return answers_of(*d, dir, {{trainer, "trainer"}, {worker, "worker"}}, trainer);
}

TEST(DaemonModes, AWorkerForkedBeforeTheDaemonStartedKeepsItsTrainerInBothModes) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the kernel's events need root";
  auto answers = in_both_modes(worker_forked_before_the_daemon);
  EXPECT_EQ(answers[Mode::Events], answers[Mode::Scans])
      << "events: " << answers[Mode::Events] << "\nscans: " << answers[Mode::Scans];
  EXPECT_EQ(answers[Mode::Events].doctor_exit, 2) << answers[Mode::Events];
}

}  // namespace
}  // namespace gpureap::testing
