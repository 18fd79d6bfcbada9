// One answer on every path: the same machine at the same moment gets the same findings (codes,
// the PIDs by their role in the scene, memory), doctor's verdict, the same choice of processes
// to end and the same GPU figures, whether the one-shot commands scan it or the daemon answers,
// in its events mode or its scan mode, whether `kill --ghosts` plans it or a dead-job policy
// matches it, what the report page's box says now, and what `top`'s detail pane says of each
// process. Each scene runs through every path on a
// fresh machine; the answers must be equal. Real processes, a stand-in dev root and the NVML test
// double.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "daemon_modes.h"
#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

constexpr uid_t kNobody = 65534;

// What one path answered, with every PID named by its role in the scene.
struct Answer {
  std::set<std::string> findings;  // "code severity: roles (bytes)"
  int doctor_exit = -1;
  std::set<std::string> chosen;  // what kill --ghosts plans, or the dead-job policy matches
  std::set<std::string> gpus;    // "GPU i: used U, attributed A, ghost G, leaked L, unattributed X"
  bool operator==(const Answer&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Answer& a) {
  out << "doctor exit " << a.doctor_exit << "\n findings:";
  for (const auto& f : a.findings) out << "\n  " << f;
  out << "\n chosen:";
  for (const auto& c : a.chosen) out << " " << c;
  out << "\n gpus:";
  for (const auto& g : a.gpus) out << "\n  " << g;
  return out;
}

using Roles = std::map<pid_t, std::string>;

std::string role_of(const json& pid, const Roles& roles) {
  if (!pid.is_number()) return "-";
  auto it = roles.find(pid.get<pid_t>());
  return it == roles.end() ? "other" : it->second;
}

void read_doctor(const RunResult& r, const Roles& roles, Answer& a) {
  a.doctor_exit = r.exit_code;
  const json doc = parse_output(r);
  for (const auto& f : doc["findings"]) {
    std::set<std::string> named;
    for (const auto& pid : f["pids"]) named.insert(role_of(pid, roles));
    std::string line = f.value("code", "?") + " " + f.value("severity", "?") + ":";
    for (const auto& n : named) line += " " + n;
    line += " (" + f["memory_bytes"].dump() + ")";
    a.findings.insert(line);
  }
}

void read_gpus(const json& snapshot, Answer& a) {
  for (const auto& g : snapshot["gpus"]) {
    const auto& m = g["memory"];
    a.gpus.insert("GPU " + g["index"].dump() + ": used " + m["used_bytes"].dump() +
                  ", attributed " + m["attributed_bytes"].dump() + ", ghost " +
                  m["ghost_bytes"].dump() + ", leaked " + m["leaked_bytes"].dump() +
                  ", unattributed " + m["unattributed_bytes"].dump());
  }
}

// A notify-only policy on what `kill --ghosts` chooses: a gone job's keepers and orphans.
const std::string kDeadJobPolicy = R"(
[[policy]]
name = "dead-job"
anomalies = ["inherited-holder", "orphan"]
after = "0s"
action = "notify"
)";

Answer one_shot(const FakeDevRoot& dev, const FakeNvml& nvml, const Roles& roles) {
  Answer a;
  read_doctor(
      run_gpureap({"doctor", "--no-daemon", "--json", "--settle", "0s", "--dev-root", dev.path()},
                  nvml.env()),
      roles, a);
  auto plan = parse_output(run_gpureap(
      {"kill", "--json", "--dry-run", "--ghosts", "--dev-root", dev.path()}, nvml.env()));
  for (pid_t pid : planned_pids(plan)) a.chosen.insert(role_of(pid, roles));
  read_gpus(run_json({"ps", "--no-daemon", "--json", "--dev-root", dev.path()}, nvml.env()), a);
  return a;
}

// The box at the top of `gpureap report`'s page: the incident journal's state now, which the
// daemon serves with its history. Its figures are the GPUs'; its problems are doctor's
// findings above info, by code and severity.
void expect_report_agrees(const DaemonProcess& d, const Answer& a) {
  const json history = json::parse(d.get("/api/v1/history?since=5m").body, nullptr, false);
  const json& now = history["incident"]["now"];
  ASSERT_TRUE(now.is_object()) << history.dump(1);
  Answer page;
  for (const auto& g : now["gpus"])
    page.gpus.insert("GPU " + g["gpu"].dump() + ": used " + g["used_bytes"].dump() +
                     ", attributed " + g["attributed_bytes"].dump() + ", ghost " +
                     g["ghost_bytes"].dump() + ", leaked " + g["leaked_bytes"].dump() +
                     ", unattributed " + g["unattributed_bytes"].dump());
  EXPECT_EQ(page.gpus, a.gpus) << "the report's figures";
  std::multiset<std::string> problems, doctor;
  for (const auto& p : now["problems"])
    problems.insert(p.value("code", "?") + " " + p.value("severity", "?"));
  for (const auto& f : a.findings) {
    const std::string head = f.substr(0, f.find(':'));
    if (head.find(" info") == std::string::npos) doctor.insert(head);
  }
  EXPECT_EQ(problems, doctor) << "the report's problems: " << now["problems"].dump(1);
}

Answer through_daemon(Mode mode, const FakeDevRoot& dev, const FakeNvml& nvml, const Roles& roles) {
  TempDir dir;
  auto d = mode_daemon(mode, dir, dev, nvml, kDeadJobPolicy);
  EXPECT_TRUE(wait_new_samples(*d, 2)) << d->log();  // the policy has seen them (after = 0s)
  Answer a;
  auto doctor = run_gpureap({"doctor", "--json", "--settle", "0s"}, client_of(dir));
  EXPECT_EQ(parse_output(doctor)["source"]["kind"], "daemon") << doctor.out << doctor.err;
  read_doctor(doctor, roles, a);
  auto policies = json::parse(d->get("/api/v1/policies").body, nullptr, false);
  for (const auto& p : policies["policies"])
    for (const auto& item : p["processes"]) a.chosen.insert(role_of(item["pid"], roles));
  auto ps = run_gpureap({"ps", "--json"}, client_of(dir));
  auto served = parse_output(ps);
  EXPECT_EQ(served["source"]["kind"], "daemon") << ps.out << ps.err;
  read_gpus(served, a);
  Answer api;  // the HTTP API's snapshot gives the same figures as the socket
  read_gpus(snapshot_of(*d), api);
  EXPECT_EQ(api.gpus, a.gpus);
  expect_report_agrees(*d, a);
  return a;
}

// "8.0 GiB", as every view writes a size (text::human_bytes).
std::string human(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  for (; v >= 1024 && u < 5; ++u) v /= 1024;
  if (u == 0) return std::to_string(bytes) + " B";
  char text[32];
  std::snprintf(text, sizeof text, v < 10 ? "%.1f %s" : "%.0f %s", v, kUnits[u]);
  return text;
}

// What doctor's findings say of each role: "role: code severity" and the finding's memory,
// as top's detail pane writes it, for the roles in `shown`.
std::multiset<std::string> doctor_by_role(const Answer& a, const std::set<std::string>& shown) {
  static const std::regex kLine(R"(^(\S+) (\S+): (.*) \((\d+)\)$)");
  std::multiset<std::string> out;
  for (const auto& f : a.findings) {
    std::smatch m;
    if (!std::regex_match(f, m, kLine)) {
      ADD_FAILURE() << "cannot read " << f;
      continue;
    }
    const uint64_t bytes = std::stoull(m[4]);
    std::istringstream roles(m[3].str());
    for (std::string role; roles >> role;)
      if (shown.count(role))
        out.insert(role + ": " + m[1].str() + " " + m[2].str() + (bytes ? " " + human(bytes) : ""));
  }
  return out;
}

// The PID whose detail pane is open ("── PID 4242 · Enter closes"), once its findings are drawn.
std::optional<pid_t> pane_pid(const std::string& screen) {
  static const std::regex kTitle(R"(PID ([0-9]+) \S+ Enter closes)");
  std::smatch m;
  if (!std::regex_search(screen, m, kTitle)) return std::nullopt;
  if (screen.find("gpureap doctor", static_cast<size_t>(m.position(0))) == std::string::npos)
    return std::nullopt;
  return static_cast<pid_t>(std::stol(m[1]));
}

// The pane's findings: "[critical] no-such-process  8.0 GiB" lines under "gpureap doctor:".
std::vector<std::string> pane_findings(const std::string& screen) {
  static const std::regex kFinding(R"(^\[(critical|warning|info)\] ([a-z0-9-]+)(  (\S+ \S+))?)");
  std::vector<std::string> out;
  std::istringstream lines(screen.substr(screen.find("Enter closes")));
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kFinding))
      out.push_back(m[2].str() + " " + m[1].str() + (m[4].matched ? " " + m[4].str() : ""));
  }
  return out;
}

// `gpureap top` on a terminal: its detail pane on each row of the scene's roles, row by row,
// says of that process what doctor says of it (the findings that name it: codes, severities,
// memory).
void expect_top_agrees(const FakeDevRoot& dev, const FakeNvml& nvml, const Roles& roles,
                       const Answer& a) {
  if (!have_tmux()) return;  // the terminal path needs tmux; the others ran
  TmuxGpureap top({"top", "--dev-root", dev.path(), "-d", "300ms"}, nvml.env(), 200, 160);
  std::map<pid_t, std::string> rows;
  top.wait_until(
      [&](const std::string& screen) {
        for (const auto& [pid, role] : roles)
          if (!rows_of(screen, pid).empty()) rows[pid] = role;
        return !rows.empty();
      },
      "a row of the scene");
  std::set<std::string> shown;
  for (const auto& [pid, role] : rows) shown.insert(role);
  top.keys({"Home"});
  top.keys({"Enter"});
  std::multiset<std::string> panes;
  std::set<pid_t> seen;
  std::optional<pid_t> at;
  std::string screen;
  while (seen.size() < rows.size()) {
    // The selection moves down one row per key until every role's row has been opened. The
    // pane is read once drawn whole (a settled screen), not while its findings are being drawn.
    screen = top.wait_until(
        [&](const std::string& sc) {
          auto pid = pane_pid(sc);
          return pid && pid != at;
        },
        "the next row's pane");
    auto pid = pane_pid(screen);
    if (!pid || pid == at) break;
    at = pid;
    if (auto it = rows.find(*at); it != rows.end() && seen.insert(*at).second)
      for (const auto& f : pane_findings(screen)) panes.insert(it->second + ": " + f);
    top.keys({"Down"});
  }
  EXPECT_EQ(seen.size(), rows.size()) << "not every row's pane was opened; the screen:\n" << screen;
  EXPECT_EQ(panes, doctor_by_role(a, shown)) << "top's detail pane; doctor:\n" << a;
}

// Builds a scene on a fresh machine (`build` returns its driver and the roles) and answers it
// through every path; `expect` checks the one-shot answer, the others must equal it.
struct Scene {
  FakeDevRoot dev;
  std::unique_ptr<FakeNvml> nvml;
  Roles roles;
  KillStrays strays;
  std::vector<Child> children;  // killed and reaped at the end, whatever their leader's state
  std::vector<std::unique_ptr<TempDir>> dirs;  // programs the scene runs from
  std::vector<std::unique_ptr<SystemProgram>> system_programs;
};

void every_path_agrees(const std::function<void(Scene&)>& build,
                       const std::function<void(const Answer&)>& expect) {
  Scene s;
  build(s);
  ASSERT_TRUE(s.nvml);
  const Answer first = one_shot(s.dev, *s.nvml, s.roles);
  {
    SCOPED_TRACE("one-shot");
    expect(first);
  }
  {
    SCOPED_TRACE("top's detail pane");
    expect_top_agrees(s.dev, *s.nvml, s.roles, first);
  }
  for (Mode m : {Mode::Events, Mode::Scans}) {
    SCOPED_TRACE(name_of(m));
    const Answer served = through_daemon(m, s.dev, *s.nvml, s.roles);
    EXPECT_EQ(served, first) << "daemon (" << name_of(m) << "):\n"
                             << served << "\none-shot:\n"
                             << first;
  }
  // Still the same machine after: nothing on any path signalled anything.
  EXPECT_EQ(one_shot(s.dev, *s.nvml, s.roles), first);
}

json gpu_listing(unsigned minor, json processes) {
  return {{"name", "NVIDIA H200"},
          {"uuid", "GPU-one-answer-" + std::to_string(minor)},
          {"minor", minor},
          {"total_bytes", 80 * GiB},
          {"processes", processes}};
}

// A child that holds `files` of the dev root and forks `workers` that inherit them (each sent
// through `ready` after the child's own PID); `leader`: it leads a process group of its own.
pid_t job_with_workers(Scene& s, std::vector<std::string> files, int workers, bool leader,
                       Ready& ready) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (leader) ::setpgid(0, 0);
    for (const auto& f : files) hold(s.dev.dev(f));
    ready.send(::getpid());
    for (int i = 0; i < workers; ++i)
      if (::fork() == 0) {
        ready.send(::getpid());
        for (;;) ::pause();
      }
    for (;;) ::pause();
  }
  s.strays.pids.push_back(pid);
  EXPECT_EQ(static_cast<pid_t>(ready.receive()), pid);
  for (int i = 0; i < workers; ++i) s.strays.pids.push_back(static_cast<pid_t>(ready.receive()));
  return pid;
}

// A PID no process has: a child that exited and was reaped.
pid_t gone_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

TEST(OneAnswer, AGhostALeakAPausedJobAndAHealthyJobOnTwoGpus) {
  // GPU 0: a gone trainer (it led its group) kept by its worker; a healthy job whose worker
  // shares its files (both GPUs', as CUDA opens every visible GPU's). GPU 1: a paused job; a
  // leak nothing holds.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the daemon's events need root";
  every_path_agrees(
      [](Scene& s) {
        Ready ready;
        const pid_t trainer = job_with_workers(s, {"nvidia0"}, 1, true, ready);
        const pid_t keeper = s.strays.pids.back();
        ::kill(trainer, SIGKILL);
        ::waitpid(trainer, nullptr, 0);
        const pid_t healthy = job_with_workers(s, {"nvidia0", "nvidia1"}, 1, true, ready);
        const pid_t helper = s.strays.pids.back();
        const pid_t paused = job_with_workers(s, {"nvidia1"}, 0, true, ready);
        ::kill(paused, SIGSTOP);
        EXPECT_TRUE(wait_for_state(paused, 'T'));
        const pid_t leak = gone_pid();
        s.roles = {{trainer, "trainer"},       {keeper, "keeper"}, {healthy, "healthy"},
                   {helper, "healthy-worker"}, {paused, "paused"}, {leak, "leak"}};
        s.nvml = std::make_unique<FakeNvml>(json{
            {"gpus",
             {gpu_listing(0, {{{"pid", trainer}, {"used_bytes", 8 * GiB}, {"holders", {keeper}}},
                              {{"pid", healthy}, {"used_bytes", 10 * GiB}}}),
              gpu_listing(1, {{{"pid", paused}, {"used_bytes", 4 * GiB}},
                              {{"pid", leak}, {"used_bytes", 2 * GiB}, {"leaked", true}}})}}});
      },
      [](const Answer& a) {
        EXPECT_EQ(a.chosen, (std::set<std::string>{"keeper"})) << a;
        auto named = [&](const std::string& prefix) {
          return std::any_of(a.findings.begin(), a.findings.end(),
                             [&](const std::string& f) { return f.rfind(prefix, 0) == 0; });
        };
        EXPECT_TRUE(named("no-such-process critical: keeper trainer (8589934592)")) << a;
        EXPECT_TRUE(named("leaked-memory critical: leak (2147483648)")) << a;
        EXPECT_TRUE(named("stopped-holder ")) << a;
        // The healthy job's worker is told as its worker, for information only.
        for (const auto& f : a.findings)
          if (f.find("healthy") != std::string::npos) {
            EXPECT_EQ(f, "inherited-holder info: healthy-worker (0)") << a;
          }
        EXPECT_EQ(a.doctor_exit, 2) << a;  // critical: the ghost and the leak
        EXPECT_EQ(a.gpus.size(), 2u) << a;
      });
}

TEST(OneAnswer, AnotherUsersMonitorBesideALooseTrainersWorkerKeepsNothing) {
  // A trainer that led no group forked a worker and died: nothing on the kernel's word ties the
  // worker to it. Another user's NVML monitor holds the GPU's file too. Neither is a keeper on
  // any path; nothing is chosen; the memory is a leak.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the daemon's events and another uid need root";
  every_path_agrees(
      [](Scene& s) {
        Ready ready;
        const pid_t trainer = job_with_workers(s, {"nvidia0"}, 1, false, ready);
        const pid_t worker = s.strays.pids.back();
        ::kill(trainer, SIGKILL);
        ::waitpid(trainer, nullptr, 0);
        Ready monitor_ready;
        pid_t monitor = ::fork();
        if (monitor == 0) {
          ::setsid();
          hold(s.dev.dev("nvidia0"));  // before it is nobody: the dev root is root's alone
          ::prctl(PR_SET_NAME, "nvml-monitor");
          if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(1);
          monitor_ready.signal();
          for (;;) ::pause();
        }
        s.strays.pids.push_back(monitor);
        monitor_ready.wait();
        s.roles = {{trainer, "trainer"}, {worker, "worker"}, {monitor, "monitor"}};
        s.nvml = std::make_unique<FakeNvml>(
            json{{"gpus",
                  {gpu_listing(
                      0, {{{"pid", trainer}, {"used_bytes", 8 * GiB}, {"holders", {worker}}}})}}});
      },
      [](const Answer& a) {
        EXPECT_EQ(a.chosen, std::set<std::string>{}) << a;
        for (const auto& f : a.findings) {
          EXPECT_EQ(f.find("monitor"), std::string::npos) << "the monitor is blamed: " << f;
          EXPECT_EQ(f.find("worker"), std::string::npos) << "the worker is blamed: " << f;
        }
      });
}

TEST(OneAnswer, AListedPidAnotherUsersProcessHasNowIsNeitherChargedNorChosen) {
  // A loose trainer's worker holds the GPU's file; the trainer is reaped and another user's
  // process is handed its number. The driver still lists the number: it is a gone listing on
  // every path, and the newcomer is never named, charged or chosen.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0)
    GTEST_SKIP() << "the daemon's events, ns_last_pid and another uid need root";
  bool reused = true;
  every_path_agrees(
      [&](Scene& s) {
        Ready ready;
        const pid_t trainer = job_with_workers(s, {"nvidia0"}, 1, false, ready);
        const pid_t worker = s.strays.pids.back();
        ::kill(trainer, SIGKILL);
        ::waitpid(trainer, nullptr, 0);
        pid_t newcomer = fork_at(trainer, [] {
          ::prctl(PR_SET_NAME, "database");
          if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(1);
          for (;;) ::pause();
        });
        reused = newcomer == trainer;
        if (reused) s.strays.pids.push_back(newcomer);
        s.roles = {{trainer, reused ? "listed-number" : "trainer"}, {worker, "worker"}};
        s.nvml = std::make_unique<FakeNvml>(
            json{{"gpus",
                  {gpu_listing(
                      0, {{{"pid", trainer}, {"used_bytes", 8 * GiB}, {"holders", {worker}}}})}}});
      },
      [&](const Answer& a) {
        EXPECT_EQ(a.chosen, std::set<std::string>{}) << a;
        // The number is named only as the gone listing: nothing is charged to its newcomer.
        EXPECT_EQ(a.gpus,
                  (std::set<std::string>{"GPU 0: used 8589934592, attributed 0, ghost 8589934592, "
                                         "leaked 8589934592, unattributed 0"}))
            << a;
      });
  if (!reused) GTEST_SKIP() << "the kernel did not hand out the trainer's number again";
}

void* live_on(void*) {
  for (;;) ::pause();
}

TEST(OneAnswer, AJobWhoseMainThreadExitedIsAliveOnEveryPath) {
  // The job's main thread ended as pthread_exit() ends it; its other thread runs on, and so does
  // its worker. The kernel shows the leader as a zombie: on no path is it gone, nor its worker
  // a keeper or an orphan.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the daemon's events need root";
  every_path_agrees(
      [](Scene& s) {
        Ready ready;
        s.children.emplace_back([&] {
          ::setpgid(0, 0);
          hold(s.dev.dev("nvidia0"));
          if (::fork() == 0) {
            ready.send(::getpid());
            for (;;) ::pause();
          }
          pthread_t t;
          if (::pthread_create(&t, nullptr, live_on, nullptr) != 0) ::_exit(1);
          ::syscall(SYS_exit, 0);  // the main thread only, without the test framework's unwinding
        });
        const pid_t job = s.children.back().pid();
        const auto worker = static_cast<pid_t>(ready.receive());
        s.strays.pids = {worker};
        EXPECT_TRUE(wait_for_state(job, 'Z'));
        s.roles = {{job, "job"}, {worker, "worker"}};
        s.nvml = std::make_unique<FakeNvml>(json{
            {"gpus",
             {gpu_listing(
                 0, {{{"pid", job}, {"used_bytes", 12 * GiB}, {"holders", {job, worker}}}})}}});
      },
      [](const Answer& a) {
        EXPECT_EQ(a.chosen, std::set<std::string>{}) << a;
        EXPECT_EQ(a.doctor_exit, 0) << a;
        EXPECT_EQ(a.gpus, (std::set<std::string>{"GPU 0: used 12884901888, attributed 12884901888, "
                                                 "ghost 0, leaked 0, unattributed 0"}))
            << a;
      });
}

TEST(OneAnswer, AKeeperHoldingTheGpuUnderAnotherNameIsTheKeeperOnEveryPath) {
  // A trainer bind-mounts the GPU file over a file of another name in its own mount namespace,
  // opens it there, forks a worker and dies: matched by number, the worker keeps its context on
  // every path, and nothing calls the memory leaked.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the daemon's events need root";
  TempDir other;
  std::ofstream(other.file("checkpoint.bin")) << "an ordinary file in this namespace\n";
  // A chroot or a container may allow no mount namespace: tried first in a child of its own,
  // since every path (top's pane among them) needs the scene.
  std::ofstream(other.file("probe")) << "probe\n";
  const pid_t probe = ::fork();
  if (probe == 0)
    ::_exit(cover_device_in_own_namespace(other.file("probe"), other.file("checkpoint.bin")) ? 0
                                                                                             : 1);
  int status = 0;
  ::waitpid(probe, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    GTEST_SKIP() << "no mount namespace can be made here";
  bool namespaces = true;
  every_path_agrees(
      [&](Scene& s) {
        Ready ready;
        pid_t trainer = ::fork();
        if (trainer == 0) {
          ::setpgid(0, 0);
          if (!cover_device_in_own_namespace(s.dev.dev("nvidia0"), other.file("checkpoint.bin"))) {
            ready.send(-1);
            ::_exit(0);
          }
          ::open(other.file("checkpoint.bin").c_str(), O_RDWR);
          if (::fork() == 0) {
            ready.send(::getpid());
            for (;;) ::pause();
          }
          for (;;) ::pause();
        }
        const long worker = ready.receive();
        namespaces = worker > 0;
        if (namespaces) s.strays.pids.push_back(static_cast<pid_t>(worker));
        ::kill(trainer, SIGKILL);
        ::waitpid(trainer, nullptr, 0);
        s.roles = {{trainer, "trainer"}, {static_cast<pid_t>(worker), "worker"}};
        s.nvml = std::make_unique<FakeNvml>(
            json{{"gpus",
                  {gpu_listing(
                      0, {{{"pid", trainer}, {"used_bytes", 8 * GiB}, {"holders", {worker}}}})}}});
      },
      [&](const Answer& a) {
        if (!namespaces) return;
        EXPECT_EQ(a.chosen, std::set<std::string>{"worker"}) << a;
        EXPECT_EQ(a.gpus, (std::set<std::string>{"GPU 0: used 8589934592, attributed 0, ghost "
                                                 "8589934592, leaked 0, unattributed 0"}))
            << a;
      });
  if (!namespaces) GTEST_SKIP() << "no mount namespace can be made here";
}

TEST(OneAnswer, AnOPathDescriptorBesideALeakHoldsNothingOnEveryPath) {
  // A process names the GPU file with O_PATH (it opens nothing) beside a listing nothing holds:
  // a leak on every path, and the looker is nobody's keeper and is never chosen.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the daemon's events need root";
  every_path_agrees(
      [](Scene& s) {
        Ready ready;
        pid_t looker = ::fork();
        if (looker == 0) {
          if (::open(s.dev.dev("nvidia0").c_str(), O_PATH) < 0) ::_exit(1);
          ready.signal();
          for (;;) ::pause();
        }
        s.strays.pids.push_back(looker);
        ready.wait();
        const pid_t leak = gone_pid();
        s.roles = {{looker, "looker"}, {leak, "leak"}};
        s.nvml = std::make_unique<FakeNvml>(
            json{{"gpus",
                  {gpu_listing(0, {{{"pid", leak}, {"used_bytes", 2 * GiB}, {"leaked", true}}})}}});
      },
      [](const Answer& a) {
        EXPECT_EQ(a.chosen, std::set<std::string>{}) << a;
        for (const auto& f : a.findings)
          EXPECT_EQ(f.find("looker"), std::string::npos) << "the O_PATH looker is named: " << f;
        EXPECT_EQ(a.gpus, (std::set<std::string>{"GPU 0: used 2147483648, attributed 0, ghost "
                                                 "2147483648, leaked 2147483648, unattributed 0"}))
            << a;
      });
}

TEST(OneAnswer, ADoubleForkedDaemonIsNoOrphanOnEveryPath) {
  // fork, setsid, fork, exit: an inference server that left its job on purpose holds GPU 0 and
  // is listed with its own memory. Its group's and session's leader is gone and init is its
  // parent, but it keeps no gone PID's context: no orphan, nothing chosen, healthy.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the daemon's events need root";
  every_path_agrees(
      [](Scene& s) {
        Ready forked, started;
        s.children.emplace_back([&] {
          pid_t middle = ::fork();
          if (middle == 0) {
            ::setsid();
            if (::fork() == 0) {
              ::prctl(PR_SET_NAME, "infer-server");
              hold(s.dev.dev("nvidiactl"));
              hold(s.dev.dev("nvidia0"));
              started.send(::getpid());
              for (;;) ::pause();
            }
            ::_exit(0);
          }
          forked.send(middle);
          ::waitpid(middle, nullptr, 0);
          for (;;) ::pause();
        });
        const auto middle = static_cast<pid_t>(forked.receive());
        const auto server = static_cast<pid_t>(started.receive());
        s.strays.pids.push_back(server);
        EXPECT_TRUE(wait_gone(middle));
        s.roles = {{server, "server"}, {middle, "middle"}};
        s.nvml = std::make_unique<FakeNvml>(
            json{{"gpus", {gpu_listing(0, {{{"pid", server}, {"used_bytes", 6 * GiB}}})}}});
      },
      [](const Answer& a) {
        EXPECT_EQ(a.chosen, std::set<std::string>{}) << a;
        EXPECT_EQ(a.findings, std::set<std::string>{}) << a;
        EXPECT_EQ(a.doctor_exit, 0) << a;
        EXPECT_EQ(a.gpus, (std::set<std::string>{"GPU 0: used 6442450944, attributed 6442450944, "
                                                 "ghost 0, leaked 0, unattributed 0"}))
            << a;
      });
}

// A copy of sleep(1) named `name` in `dir`, owned by `uid`.
std::string sleep_named(const TempDir& dir, const std::string& name, uid_t uid) {
  const std::string program = dir.file(name);
  std::filesystem::copy_file("/bin/sleep", program);
  ::chmod(program.c_str(), 0755);
  EXPECT_EQ(::chown(program.c_str(), uid, uid), 0);
  return program;
}

TEST(OneAnswer, CopiesOfTheMpsProgramsInAUsersHomeServeNoClientOnEveryPath) {
  // The MPS control daemon and server under their real names, run from copies a user owns: an
  // ordinary job. A gone client the driver lists beside it is no client of that "server": it is
  // nobody's to keep, and the "server" is never chosen.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the daemon's events and another uid need root";
  every_path_agrees(
      [](Scene& s) {
        auto& home = *s.dirs.emplace_back(std::make_unique<TempDir>());
        ASSERT_EQ(::chown(home.path().c_str(), kNobody, kNobody), 0);
        ::chmod(home.path().c_str(), 0755);
        const auto control_program = sleep_named(home, "nvidia-cuda-mps-control", kNobody);
        const auto server_program = sleep_named(home, "nvidia-cuda-mps-server", kNobody);
        Ready ready;
        s.children.emplace_back([&] {
          ::setsid();
          if (pid_t server = ::fork(); server == 0) {
            hold(s.dev.dev("nvidia0"));
            ::execl(server_program.c_str(), "nvidia-cuda-mps-server", "infinity", nullptr);
            ::_exit(97);
          } else {
            ready.send(server);
          }
          ::execl(control_program.c_str(), "nvidia-cuda-mps-control", "infinity", nullptr);
          ::_exit(97);
        });
        const pid_t control = s.children.back().pid();
        const auto server = static_cast<pid_t>(ready.receive());
        s.strays.pids.push_back(server);
        EXPECT_TRUE(wait_until(
            [&] { return runs(server, server_program) && runs(control, control_program); }));
        const pid_t client = gone_pid();
        s.roles = {{control, "control"}, {server, "server"}, {client, "client"}};
        s.nvml = std::make_unique<FakeNvml>(
            json{{"gpus",
                  {gpu_listing(0, {{{"pid", server}, {"used_bytes", GiB}},
                                   {{"pid", client},
                                    {"used_bytes", 4 * GiB},
                                    {"kind", "mps"},
                                    {"holders", {server}}}})}}});
      },
      [](const Answer& a) {
        EXPECT_EQ(a.chosen, std::set<std::string>{}) << a;
        for (const auto& f : a.findings)
          EXPECT_EQ(f.find("server"), std::string::npos) << "the copy is blamed: " << f;
        EXPECT_EQ(a.gpus, (std::set<std::string>{"GPU 0: used 5368709120, attributed 1073741824, "
                                                 "ghost 4294967296, leaked 4294967296, "
                                                 "unattributed 0"}))
            << a;
      });
}

TEST(OneAnswer, AKeeperRunningAProtectedProgramIsTheKeeperOnEveryPath) {
  // A gone trainer's worker (its group: kin on the kernel's word) then runs a system-installed
  // protected program's name. It keeps the dead job's memory whatever it runs now; a real
  // persistence daemon beside it, which keeps nothing, is never chosen.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the daemon's events and a system program need root";
  every_path_agrees(
      [](Scene& s) {
        auto& bin = *s.dirs.emplace_back(std::make_unique<TempDir>());
        ::chmod(bin.path().c_str(), 0755);
        const auto program = sleep_named(bin, "nvidia-persistenced", 0);
        Ready ready;
        pid_t trainer = ::fork();
        if (trainer == 0) {
          ::setpgid(0, 0);
          hold(s.dev.dev("nvidia0"));
          if (::fork() == 0) {
            ready.send(::getpid());
            ::execl(program.c_str(), "nvidia-persistenced", "infinity", nullptr);
            ::_exit(97);
          }
          for (;;) ::pause();
        }
        const auto keeper = static_cast<pid_t>(ready.receive());
        s.strays.pids.push_back(keeper);
        EXPECT_TRUE(wait_until([&] { return runs(keeper, program); }));
        ::kill(trainer, SIGKILL);
        ::waitpid(trainer, nullptr, 0);
        s.system_programs.push_back(run_system_program(s.dev, "nvidia0", "nvidia-persistenced"));
        const pid_t persistenced = s.system_programs.back()->pid();
        s.roles = {{trainer, "trainer"}, {keeper, "keeper"}, {persistenced, "persistenced"}};
        s.nvml = std::make_unique<FakeNvml>(
            json{{"gpus",
                  {gpu_listing(
                      0, {{{"pid", trainer}, {"used_bytes", 8 * GiB}, {"holders", {keeper}}}})}}});
      },
      [](const Answer& a) {
        EXPECT_EQ(a.chosen, std::set<std::string>{"keeper"}) << a;
        EXPECT_TRUE(a.findings.count("no-such-process critical: keeper trainer (8589934592)")) << a;
        // The persistence daemon is told as protected, for information only.
        for (const auto& f : a.findings)
          if (f.find("persistenced") != std::string::npos) {
            EXPECT_EQ(f, "protected-holder info: persistenced (0)") << a;
          }
      });
}

}  // namespace
}  // namespace gpureap::testing
