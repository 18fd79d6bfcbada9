// The report as an incident page, from a real incident through a daemon: a trainer with two
// forked workers on GPU 0 is killed, its PID becomes a ghost kept by the workers, `gpureap kill`
// ends them and the memory comes back; GPU 1 has a leaked context and a stopped job. The page
// must say who ended the ghost, draw a lane per process, and open with the state now.
// With $GPUREAP_INCIDENT_PAGE_DIR set, the page is left there (the browser test renders it).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

// A trainer (named "trainer") that opened GPU 0's file and forked two workers ("loader-worker")
// that inherit it; all three live until killed.
struct Trainer {
  Ready ready;
  std::unique_ptr<Child> child;
  pid_t workers[2] = {0, 0};
  KillStrays strays;

  explicit Trainer(const FakeDevRoot& dev) {
    child = std::make_unique<Child>([&] {
      ::setpgid(0, 0);  // a job of its own, as a shell starts one: its workers are its group
      ::prctl(PR_SET_NAME, "trainer");
      hold(dev.dev("nvidia0"));
      for (int i = 0; i < 2; ++i) {
        pid_t w = ::fork();
        if (w == 0) {
          ::prctl(PR_SET_NAME, "loader-worker");
          for (;;) ::pause();
        }
        ready.send(w);
      }
    });
    for (pid_t& w : workers) {
      w = static_cast<pid_t>(ready.receive());
      strays.pids.push_back(w);
    }
  }
};

std::string config_file(const TempDir& dir, const std::string& socket) {
  std::ofstream(dir.file("config.toml"))
      << "interval = \"200ms\"\nholder_scan_interval = \"200ms\"\n"
      << "audit_log = \"" << dir.file("audit.jsonl") << "\"\n"
      << "local_socket = \"" << socket << "\"\n";
  return dir.file("config.toml");
}

json snapshot(const DaemonProcess& d) {
  return json::parse(d.get("/api/v1/snapshot").body, nullptr, false);
}

// The daemon's latest row of pid says it is gone (the driver lists it, /proc has it not).
bool listed_gone(const DaemonProcess& d, pid_t pid) {
  json row = row_of(snapshot(d), pid);
  return !row.is_null() && row.dump().find("no-such-process") != std::string::npos;
}

bool listed(const DaemonProcess& d, pid_t pid) {
  return !row_of(snapshot(d), pid).is_null();
}

// The element <g class="lane..." data-pid="PID" ...> of the page, up to its end.
std::string lane_of(const std::string& html, pid_t pid) {
  auto at = html.find("data-pid=\"" + std::to_string(pid) + "\" data-spans=");
  if (at == std::string::npos) return "";
  auto start = html.rfind("<g class=\"lane", at);
  auto end = html.find("</g></g>", at);
  if (end == std::string::npos) end = html.find("</svg>", at);
  return html.substr(start, end - start);
}

TEST(ReportIncident, ATrainerKilledItsGhostEndedByKillALeakAndAStoppedJob) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "kcmp and the daemon's peer checks need root here";
  FakeDevRoot dev;
  Trainer trainer(dev);
  const pid_t trainer_pid = trainer.child->pid();
  Child eval = holding(dev, "nvidia1", [] { ::prctl(PR_SET_NAME, "eval-job"); });
  ASSERT_EQ(::kill(eval.pid(), SIGSTOP), 0);
  ASSERT_TRUE(wait_for_state(eval.pid(), 'T'));
  const pid_t leaked = dead_pid();
  json scenario = {
      {"gpus",
       {{{"name", "NVIDIA H100 80GB HBM3"},
         {"uuid", "GPU-8f3a2c1e-0000-1111-2222-333344445555"},
         {"minor", 0},
         {"total_bytes", 80 * GiB},
         {"processes",
          {{{"pid", trainer_pid},
            {"used_bytes", 12 * GiB},
            {"name", "python"},
            {"holders", {trainer_pid, trainer.workers[0], trainer.workers[1]}}}}}},
        {{"name", "NVIDIA H100 80GB HBM3"},
         {"uuid", "GPU-51d0b7aa-0000-1111-2222-333344445555"},
         {"minor", 1},
         {"total_bytes", 80 * GiB},
         {"processes",
          {{{"pid", leaked}, {"used_bytes", 3 * GiB}, {"leaked", true}, {"holders", {leaked}}},
           {{"pid", eval.pid()}, {"used_bytes", 4 * GiB}, {"name", "eval-job"}}}}}}}};
  FakeNvml nvml(scenario);
  TempDir run;
  const std::string socket = run.file("gpureap.sock");
  const std::string config = config_file(run, socket);
  DaemonProcess d({"--config", config, "--dev-root", dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(d.wait_log(kServingLocalSocket)) << d.log();
  auto env = nvml.env();
  env.push_back("GPUREAP_DAEMON_SOCKET=" + socket);

  // The trainer runs a few samples with its workers, then dies: its PID is a ghost the workers
  // keep, for a few samples more. Samples, not time: a loaded machine samples late.
  ASSERT_TRUE(wait_new_samples(d, 6)) << d.log();
  trainer.child->kill_and_reap();
  ASSERT_TRUE(wait_until([&] { return listed_gone(d, trainer_pid); })) << snapshot(d).dump();
  ASSERT_TRUE(wait_new_samples(d, 5)) << d.log();

  // `gpureap kill` of the gone PID ends its keepers; the daemon hears of it first.
  auto killed = run_gpureap(
      {"kill", "--yes", "--grace", "2s", "--dev-root", dev.path(), std::to_string(trainer_pid)},
      env);
  ASSERT_EQ(killed.exit_code, 0) << killed.out << killed.err << d.log();
  ASSERT_TRUE(wait_gone(trainer.workers[0]) && wait_gone(trainer.workers[1]));
  ASSERT_TRUE(wait_until([&] { return !listed(d, trainer_pid); })) << snapshot(d).dump();
  ASSERT_TRUE(wait_new_samples(d, 4)) << d.log();  // the state now, a few samples on

  // The audit log says who asked, with the user the daemon read from the socket.
  auto audit = read_json_lines(run.file("audit.jsonl"));
  size_t announced = 0;
  for (const auto& r : audit)
    if (r.value("event", "") == "announced") {
      ++announced;
      EXPECT_EQ(r["actor"]["user"], "root") << r.dump();
      EXPECT_EQ(r["actor"]["uid"], 0) << r.dump();
      EXPECT_EQ(r["actor"]["command"], "gpureap kill " + std::to_string(trainer_pid)) << r.dump();
      EXPECT_EQ(r["action"], "SIGTERM");
    }
  EXPECT_EQ(announced, 2u) << read_text(run.file("audit.jsonl"));
  auto shown = run_gpureap({"audit", "--file", run.file("audit.jsonl"), "--no-color"});
  EXPECT_NE(shown.out.find("gpureap kill " + std::to_string(trainer_pid) + " (root)"),
            std::string::npos)
      << shown.out;

  // The page, through the daemon's local socket.
  const char* keep = std::getenv("GPUREAP_INCIDENT_PAGE_DIR");
  const std::string out = keep ? std::string(keep) + "/incident.html" : run.file("incident.html");
  if (keep) std::filesystem::create_directories(keep);
  auto page = run_gpureap({"report", "--config", config, "--since", "10m", "--out", out}, env);
  ASSERT_EQ(page.exit_code, 0) << page.err;
  const std::string html = read_text(out);
  if (keep)
    std::filesystem::copy_file(run.file("audit.jsonl"), std::string(keep) + "/audit.jsonl",
                               std::filesystem::copy_options::overwrite_existing);

  // Who acted: the ghost ended by the kill, as root, not "exited on its own".
  const std::string by = "ended by `gpureap kill " + std::to_string(trainer_pid) + "` (root) at ";
  EXPECT_NE(html.find(by), std::string::npos) << html;
  EXPECT_EQ(html.find("exited on its own"), std::string::npos);
  // The gone PID has the name it had while alive; the leak is kept by nobody.
  auto row = html.find("<tr data-pid=\"" + std::to_string(trainer_pid) + "\">");
  ASSERT_NE(row, std::string::npos);
  EXPECT_NE(html.substr(row, 200).find("<td>trainer</td>"), std::string::npos)
      << html.substr(row, 300);
  auto leak_row = html.find("<tr data-pid=\"" + std::to_string(leaked) + "\">");
  ASSERT_NE(leak_row, std::string::npos);
  EXPECT_NE(html.substr(leak_row, 300).find("nobody (leaked)"), std::string::npos);

  // Headings with the index, name and short UUID.
  EXPECT_NE(html.find("<h2>GPU 0 · NVIDIA H100 80GB HBM3 · GPU-8f3a2c1e</h2>"), std::string::npos);
  EXPECT_NE(html.find("<h2>GPU 1 · NVIDIA H100 80GB HBM3 · GPU-51d0b7aa</h2>"), std::string::npos);

  // The lanes: the trainer alive then a ghost; each worker with the kill's signal on it and
  // who sent it; the stopped job drawn as stopped; the leak as a lane kept by nobody.
  const std::string t_lane = lane_of(html, trainer_pid);
  EXPECT_NE(t_lane.find("data-spans=\"alive ghost\""), std::string::npos) << t_lane;
  EXPECT_NE(t_lane.find("mark-ghost"), std::string::npos) << t_lane;
  EXPECT_NE(t_lane.find("trainer"), std::string::npos) << t_lane;
  for (pid_t w : trainer.workers) {
    const std::string lane = lane_of(html, w);
    ASSERT_FALSE(lane.empty()) << "no lane for worker " << w;
    EXPECT_NE(lane.find("loader-worker"), std::string::npos) << lane;
    EXPECT_NE(lane.find("mark-fork"), std::string::npos) << lane;
    EXPECT_NE(lane.find("mark-signal"), std::string::npos) << lane;
    EXPECT_NE(lane.find("SIGTERM to PID " + std::to_string(w) + " by `gpureap kill " +
                        std::to_string(trainer_pid) + "` (root)"),
              std::string::npos)
        << lane;
  }
  const std::string eval_lane = lane_of(html, eval.pid());
  EXPECT_NE(eval_lane.find("stopped-now"), std::string::npos) << eval_lane;
  EXPECT_NE(eval_lane.find("span-stopped"), std::string::npos) << eval_lane;
  EXPECT_NE(html.find(std::to_string(eval.pid()) + " eval-job (root) (stopped)"),
            std::string::npos);
  const std::string leak_lane = lane_of(html, leaked);
  EXPECT_NE(leak_lane.find(" leaked"), std::string::npos) << leak_lane;
  EXPECT_NE(leak_lane.find("leaked: kept by nobody"), std::string::npos) << leak_lane;

  // Now, first: GPU 0 back to normal, GPU 1 leaked with its stopped holder; each problem with
  // the command that fixes it.
  auto now = html.find("<section class=\"now\"");
  ASSERT_NE(now, std::string::npos);
  EXPECT_LT(now, html.find("<section class=\"gpu"));
  const std::string box = html.substr(now, html.find("</section>", now) - now);
  EXPECT_NE(box.find("<li data-gpu=\"1\" data-state=\"leaked\">"), std::string::npos) << box;
  EXPECT_EQ(box.find("data-gpu=\"0\" data-state=\"ghost\""), std::string::npos) << box;
  EXPECT_NE(box.find("stopped holder " + std::to_string(eval.pid())), std::string::npos) << box;
  EXPECT_NE(box.find("<code>"), std::string::npos) << box;
  EXPECT_NE(box.find("gpureap reset --gpu 1"), std::string::npos) << box;
  // --until ends the window in the past: no "now" then; before --since it is refused.
  auto past = run_gpureap({"report", "--config", config, "--since", "10m", "--until", "1s", "--out",
                           run.file("p.html")},
                          env);
  EXPECT_EQ(past.exit_code, 0) << past.err;
  EXPECT_EQ(read_text(run.file("p.html")).find("<section class=\"now\""), std::string::npos);
  auto empty = run_gpureap(
      {"report", "--config", config, "--since", "1m", "--until", "2m", "--out", run.file("q.html")},
      env);
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("--until is not after --since"), std::string::npos) << empty.err;
  // Still one file: no script, nothing fetched.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("src="), std::string::npos);
}

// Every other command that ends processes or resets a GPU tells the daemon first: `doctor --fix`,
// `run`'s teardown and `reset` each leave an announced record naming the command and the user.
TEST(ReportIncident, DoctorFixRunAndResetSaySoFirst) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "reset needs root, and the daemon's socket is root's";
  FakeDevRoot dev;
  auto gone = gone_trainer(dev);
  json scenario = {{"gpus",
                    {{{"minor", 0},
                      {"processes",
                       {{{"pid", gone->trainer},
                         {"used_bytes", 2 * GiB},
                         {"holders", {gone->trainer, gone->worker}}}}}},
                     {{"minor", 1}, {"processes", json::array()}}}}};
  FakeNvml nvml(scenario);
  TempDir run;
  const std::string socket = run.file("gpureap.sock");
  DaemonProcess d({"--config", config_file(run, socket), "--dev-root", dev.path()}, nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket)) << d.log();
  auto env = nvml.env();
  env.push_back("GPUREAP_DAEMON_SOCKET=" + socket);

  auto fix =
      run_gpureap({"doctor", "--fix", "--yes", "--settle", "300ms", "--dev-root", dev.path()}, env);
  EXPECT_TRUE(wait_gone(gone->worker)) << fix.out << fix.err;

  TempDir smi;
  std::ofstream(smi.file("nvidia-smi")) << "#!/bin/sh\nexit 0\n";
  ::chmod(smi.file("nvidia-smi").c_str(), 0755);
  auto reset_env = env;
  reset_env.push_back("PATH=" + smi.path() + ":/usr/bin:/bin");
  auto reset = run_gpureap({"reset", "--gpu", "1", "--yes", "--dev-root", dev.path()}, reset_env);
  EXPECT_EQ(reset.exit_code, 0) << reset.out << reset.err;

  auto job = run_gpureap({"run", "--quiet", "--grace", "2s", "--dev-root", dev.path(), "--", "sh",
                          "-c", "sleep 60 & exit 0"},
                         env);
  EXPECT_EQ(job.exit_code, 0) << job.err;

  std::map<std::string, json> by_command;
  for (const auto& r : read_json_lines(run.file("audit.jsonl")))
    if (r.value("event", "") == "announced") {
      EXPECT_EQ(r["actor"]["user"], "root") << r.dump();
      by_command[r["actor"]["command"].get<std::string>()] = r;
    }
  ASSERT_TRUE(by_command.count("gpureap doctor --fix")) << read_text(run.file("audit.jsonl"));
  EXPECT_EQ(by_command["gpureap doctor --fix"]["process"]["pid"], gone->worker);
  ASSERT_TRUE(by_command.count("gpureap reset --gpu 1")) << read_text(run.file("audit.jsonl"));
  EXPECT_EQ(by_command["gpureap reset --gpu 1"]["action"], "reset");
  bool teardown = false;
  for (const auto& [command, r] : by_command)
    if (command.rfind("gpureap run sh -c", 0) == 0) {
      teardown = true;
      EXPECT_EQ(r["action"], "SIGTERM");
      EXPECT_EQ(r["process"]["comm"], "sleep");
    }
  EXPECT_TRUE(teardown) << read_text(run.file("audit.jsonl"));
}

// Without a daemon, the commands that announce act as before, without a word.
TEST(ReportIncident, KillWithoutADaemonActsAsBefore) {
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  TempDir nowhere;
  auto r = run_gpureap(kill_args(dev, {"--yes", std::to_string(job.pid())}),
                       {"GPUREAP_DAEMON_SOCKET=" + nowhere.file("none.sock")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("daemon"), std::string::npos) << r.err;
  EXPECT_EQ(end_signal(job.pid()), SIGTERM);
}

}  // namespace
}  // namespace gpureap::testing
