// Real PyTorch jobs (Debian's python3-torch, CPU): DataLoader workers as PyTorch makes them, with
// the stand-in device file opened where CUDA would open /dev/nvidia0 and the NVML test double
// listing the trainer. Skips where PyTorch is missing (scripts/install-deps.sh --pytorch installs
// it).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <utime.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "pytorch_job.h"
#include "support.h"

namespace gpureap::testing {
namespace {

std::string wchan_of(pid_t pid) {
  return read_text("/proc/" + std::to_string(pid) + "/wchan");
}

// The live children of `parent`, from /proc/*/stat.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    if (parent_of(pid) == parent && is_alive(pid)) out.push_back(pid);
  }
  return out;
}

// A trainer whose DataLoader(num_workers=4) has two workers stuck in a read (their item's read
// blocks on a pipe, as on a hung file system) and two idle, is killed with SIGKILL. PyTorch's
// worker watchdog ends the idle ones within seconds (they check their parent every 5 s); the
// stuck ones never check and keep the trainer's GPU file. gpureap finds the ghost and its two
// keepers and plans exactly them: a healthy job and another user's job on the GPU are left alone.
TEST(PytorchJobs, StuckDataLoaderWorkersKeepAKilledTrainersMemory) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  FakeDevRoot dev;
  Child healthy = holding(dev, "nvidia0");
  std::vector<pid_t> others{healthy.pid()};
  std::unique_ptr<Child> other_user;
  if (::geteuid() == 0) {  // another user's job on the same GPU
    other_user = std::make_unique<Child>(Child([&] {
      hold(dev.dev("nvidia0"));
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(1);
    }));
    ASSERT_TRUE(
        wait_until([&] { return proc_status_field(other_user->pid(), "Uid").find("65534") == 0; }));
    others.push_back(other_user->pid());
  }
  PythonJob trainer({pytorch_script("dataloader_trainer.py"), dev.dev("nvidia0")});
  auto workers = trainer.numbers_after("workers");
  ASSERT_EQ(workers.size(), 4u) << "the trainer did not start its workers";
  const std::vector<pid_t> stuck{static_cast<pid_t>(workers[0]), static_cast<pid_t>(workers[1])};
  const std::vector<pid_t> idle{static_cast<pid_t>(workers[2]), static_cast<pid_t>(workers[3])};
  KillStrays strays{{stuck[0], stuck[1], idle[0], idle[1]}};
  // Workers 0 and 1 got the data set's two items and read them; 2 and 3 got none.
  for (pid_t w : stuck)
    ASSERT_TRUE(
        wait_until([&] { return wchan_of(w).find("pipe_read") != std::string::npos; }, 120000))
        << w << " waits in " << wchan_of(w);
  // PyTorch's watchdog notes the parent's PID once, just before a worker's first wait for work:
  // a worker still starting when the trainer dies takes its new parent for the trainer and never
  // ends. So the trainer is killed only once the idle ones wait (poll) for work.
  for (pid_t w : idle)
    ASSERT_TRUE(wait_until([&] { return wchan_of(w).find("poll") != std::string::npos; }, 120000))
        << w << " waits in " << wchan_of(w);
  const pid_t ghost = trainer.pid();
  nlohmann::json listed = {{{"pid", ghost},
                            {"used_bytes", 8 * GiB},
                            {"holders", {ghost, stuck[0], stuck[1], idle[0], idle[1]}}}};
  for (pid_t p : others) listed.push_back({{"pid", p}, {"used_bytes", 2 * GiB}});
  FakeNvml nvml(
      nlohmann::json{{"gpus", {nvml_gpu(0, listed), nvml_gpu(1, nlohmann::json::array())}}});

  trainer.child().kill_and_reap();  // SIGKILL: no Python code of the trainer runs again
  for (pid_t w : idle) EXPECT_TRUE(wait_gone(w, 120000)) << "idle worker " << w << " stayed";
  for (pid_t w : stuck) {
    EXPECT_TRUE(is_alive(w)) << "stuck worker " << w << " ended";
    EXPECT_NE(wchan_of(w).find("pipe_read"), std::string::npos) << wchan_of(w);
  }

  auto snap = run_json({"ps", "--json", "--dev-root", dev.path()}, nvml.env());
  EXPECT_FALSE(row_of(snap, ghost).is_null()) << snap.dump(2);
  for (pid_t w : stuck) {
    auto row = row_of(snap, w);
    ASSERT_FALSE(row.is_null()) << snap.dump(2);
    EXPECT_EQ(row["pgid"], ghost);  // the trainer's group, which has no leader now
    auto a = anomalies(row);
    EXPECT_NE(std::find(a.begin(), a.end(), "orphan"), a.end()) << row.dump();
  }
  for (pid_t p : others) {
    auto row = row_of(snap, p);
    ASSERT_FALSE(row.is_null()) << snap.dump(2);
    EXPECT_EQ(row["anomalies"], nlohmann::json::array()) << row.dump();
  }

  auto doctor =
      run_gpureap({"doctor", "--json", "--dev-root", dev.path(), "--settle", "300ms"}, nvml.env());
  EXPECT_EQ(doctor.exit_code, 2) << doctor.out << doctor.err;
  auto d = parse_output(doctor);
  const auto* f = finding(d, "no-such-process");
  ASSERT_NE(f, nullptr) << d["findings"].dump(2);
  EXPECT_EQ(sorted(pids((*f)["pids"])), sorted({ghost, stuck[0], stuck[1]})) << f->dump(2);
  EXPECT_EQ((*f)["memory_bytes"], 8 * GiB);
  // No finding names a healthy process (its PID, not digits that happen to be in a figure).
  for (const auto& x : d["findings"])
    for (pid_t p : others) {
      const auto named = pids(x["pids"]);
      EXPECT_EQ(std::count(named.begin(), named.end(), p), 0) << x.dump(2);
      EXPECT_EQ(x.dump().find("PID " + std::to_string(p) + " "), std::string::npos) << x.dump(2);
    }

  auto plan = parse_output(run_gpureap(gpu_kill_args(dev, {"--ghosts", "--dry-run"}), nvml.env()));
  EXPECT_EQ(planned_pids(plan), sorted(stuck)) << plan.dump(2);
  for (pid_t w : stuck) EXPECT_TRUE(is_alive(w)) << "a dry run signalled " << w;
}

// With the "file_system" sharing strategy a DataLoader's batches travel through
// /dev/shm/torch_<worker pid>_<random>_<counter>. PyTorch's torch_shm_manager (one per worker, in
// a session of its own, so a process-group kill misses it) removes them when the job's processes
// are gone; only when everything dies at once, as a cgroup kill or an OOM kill of the job does,
// are they left. The job runs with a /dev/shm of its own (a mount namespace) that is the test's
// dev root's shm/, where doctor looks.
TEST(PytorchJobs, AJobKilledWholeLeavesItsDataLoaderFilesAndDoctorFindsThem) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  if (::geteuid() != 0) GTEST_SKIP() << "a /dev/shm of the job's own needs root";
  FakeDevRoot dev;
  const std::string shm = dev.file("shm");
  ::mkdir(shm.c_str(), 01777);
  auto own_shm = [&] {
    return ::unshare(CLONE_NEWNS) == 0 &&
           ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
           ::mount(shm.c_str(), "/dev/shm", nullptr, MS_BIND, nullptr) == 0;
  };
  // A chroot or a container may allow no mount namespace: tried first in a child of its own.
  const pid_t probe = ::fork();
  if (probe == 0) ::_exit(own_shm() ? 0 : 1);
  int status = 0;
  ::waitpid(probe, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    GTEST_SKIP() << "no mount namespace with a /dev/shm of the job's own can be made here";
  PythonJob trainer({pytorch_script("shm_trainer.py")}, [&] {
    if (!own_shm()) ::_exit(126);
  });
  auto workers = trainer.numbers_after("workers");
  ASSERT_EQ(workers.size(), 2u) << "the trainer did not start its workers";
  std::vector<pid_t> job{trainer.pid()};
  for (long w : workers) {
    job.push_back(static_cast<pid_t>(w));
    for (pid_t manager : children_of(static_cast<pid_t>(w))) job.push_back(manager);
  }
  KillStrays strays{job};
  for (pid_t p : job) ::kill(p, SIGKILL);  // all at once, as a cgroup kill
  trainer.child().kill_and_reap();
  for (pid_t p : job) ASSERT_TRUE(wait_gone(p, 60000)) << p;
  // The workers prefetch while the trainer waits: what is left is known only once all are gone.
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(shm)) files.insert(e.path());
  ASSERT_FALSE(files.empty()) << "nothing was left in " << shm;
  for (const auto& path : files) {
    const std::string name = std::filesystem::path(path).filename();
    EXPECT_TRUE(name.rfind("torch_" + std::to_string(workers[0]) + "_", 0) == 0 ||
                name.rfind("torch_" + std::to_string(workers[1]) + "_", 0) == 0)
        << name;
  }
  // Doctor leaves a file alone for a minute after its last change (a job may be writing it):
  // age them as that minute would.
  const utimbuf old{::time(nullptr) - 600, ::time(nullptr) - 600};
  std::set<std::string> removals;
  for (const auto& path : files) {
    ::utime(path.c_str(), &old);
    removals.insert("rm " + path);
  }
  FakeNvml nvml(nlohmann::json{{"gpus", {nvml_gpu(0, nlohmann::json::array())}}});
  auto d = parse_output(
      run_gpureap({"doctor", "--json", "--dev-root", dev.path(), "--settle", "0s"}, nvml.env()));
  const auto* f = finding(d, "ipc-residue");
  ASSERT_NE(f, nullptr) << d["findings"].dump(2);
  std::set<std::string> commands;
  for (const auto& step : (*f)["steps"])
    if (step["command"].get<std::string>().find(shm) != std::string::npos)
      commands.insert(step["command"]);
  EXPECT_EQ(commands, removals) << f->dump(2);
  EXPECT_NE((*f)["evidence"].dump().find("PyTorch"), std::string::npos) << f->dump(2);
}

std::string environ_of(pid_t pid) {
  std::string e = read_text("/proc/" + std::to_string(pid) + "/environ");
  std::replace(e.begin(), e.end(), '\0', '\n');
  return e;
}

// A job started rank by rank, as Slurm's srun or a hand-written launcher starts one: rank 3 is
// SIGKILLed while it loads (as the OOM killer kills one), and nothing tears the others down.
// Ranks 0-2 wait in the gloo group's set-up for it, holding GPUs 0-2. Beside it on the machine:
// a torchrun job that restarts its ranks after losing one (restarts left), another user's job
// and a healthy one. A doctor started after rank 3 died, with no daemon, finds the job stalled:
// its launcher, which waits for rank 0 first, has not reaped rank 3, and the kernel keeps how it
// ended (SIGKILL) and whose it was. The remedy's kill and doctor --fix plan exactly its launcher
// and its live ranks. Then rank 2 dies between doctor --fix's two samples: both are named gone,
// and --fix --yes ends exactly the launcher and ranks 0 and 1.
TEST(PytorchJobs, AJobStartedRankByRankHangsWhenARankDiesAndOnlyItIsPlanned) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  FakeDevRoot dev;
  for (const char* name : {"nvidia2", "nvidia3"}) std::ofstream(dev.dev(name)) << "stand-in\n";
  Child healthy = holding(dev, "nvidia3");
  std::vector<pid_t> others{healthy.pid()};
  std::unique_ptr<Child> other_user;
  if (::geteuid() == 0) {
    other_user = std::make_unique<Child>(Child([&] {
      hold(dev.dev("nvidia3"));
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(1);
    }));
    ASSERT_TRUE(
        wait_until([&] { return proc_status_field(other_user->pid(), "Uid").find("65534") == 0; }));
    others.push_back(other_user->pid());
  }
  const std::string per_rank = dev.dev("nvidia") + "{}";
  PythonJob job(rank_launcher_args(per_rank, 3));
  auto launched = job.numbers_after("ranks");
  ASSERT_EQ(launched.size(), 4u) << "the launcher did not start its ranks";
  const std::vector<pid_t> ranks(launched.begin(), launched.end());
  const pid_t launcher = job.pid();
  KillStrays strays{ranks};
  auto elastic_args = torchrun(2, 1, free_port());
  elastic_args.insert(elastic_args.end(), {pytorch_script("gloo_rank.py"), per_rank});
  PythonJob elastic(elastic_args);
  auto elastic_ranks = pids_after(elastic, "ready", 2);
  ASSERT_EQ(elastic_ranks.size(), 2u) << "torchrun's ranks did not start";
  strays.pids.insert(strays.pids.end(), elastic_ranks.begin(), elastic_ranks.end());
  for (size_t i = 0; i < ranks.size(); ++i)
    ASSERT_TRUE(wait_until([&] { return holds_file(ranks[i], per_rank, i); }, 120000))
        << "rank " << i << " did not open its GPU";

  ::kill(ranks[3], SIGKILL);  // while it loads: ranks 0-2 wait for it in the group's set-up
  ASSERT_TRUE(wait_for_state(ranks[3], 'Z'));  // its launcher waits for rank 0 first
  ::kill(elastic_ranks[1], SIGKILL);           // torchrun restarts both of its ranks

  nlohmann::json listed = nlohmann::json::array();
  std::vector<nlohmann::json> gpus = rank_per_gpu(ranks, 3, 32 * GiB);
  nlohmann::json on_three = nlohmann::json::array();
  for (pid_t p : others) on_three.push_back({{"pid", p}, {"used_bytes", 2 * GiB}});
  gpus.push_back(nvml_gpu(3, on_three));
  FakeNvml nvml(nlohmann::json{{"gpus", gpus}});

  const std::set<pid_t> job_side{launcher, ranks[0], ranks[1], ranks[2], ranks[3]};
  auto doctor = run_gpureap(
      {"doctor", "--json", "--no-daemon", "--dev-root", dev.path(), "--settle", "300ms"},
      nvml.env());
  auto d = parse_output(doctor);
  // One story: the stalled job, and no finding names the torchrun job or the others.
  std::vector<nlohmann::json> about_job;
  for (const auto& x : d["findings"]) {
    for (const auto& p : x["pids"])
      if (job_side.count(p.get<pid_t>())) {
        about_job.push_back(x);
        break;
      }
    for (pid_t p : others) {
      EXPECT_EQ(std::find(x["pids"].begin(), x["pids"].end(), p), x["pids"].end()) << x.dump(2);
    }
    EXPECT_EQ(std::find(x["pids"].begin(), x["pids"].end(), elastic.pid()), x["pids"].end())
        << x.dump(2);
  }
  ASSERT_EQ(about_job.size(), 1u) << d["findings"].dump(2);
  const auto& f = about_job[0];
  EXPECT_EQ(f["code"], "stalled-job") << f.dump(2);
  const std::vector<pid_t> tree{launcher, ranks[0], ranks[1], ranks[2]};
  EXPECT_EQ(sorted(pids(f["pids"])), sorted(tree)) << f.dump(2);
  EXPECT_EQ(f["memory_bytes"], 96 * GiB);
  EXPECT_EQ(f["severity"], "warning");
  const std::string summary = f["summary"].get<std::string>();
  EXPECT_NE(summary.find("rank 3 of job PID " + std::to_string(launcher) + " (python3, user "),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find(" is gone (its launcher's child PID " + std::to_string(ranks[3]) +
                         " was killed by SIGKILL); ranks 0\u20132 still hold 96 GiB on GPUs "
                         "0\u20132 and are probably waiting for it"),
            std::string::npos)
      << summary;
  EXPECT_NE(f["evidence"].dump().find("the launcher has not reaped its child PID " +
                                      std::to_string(ranks[3]) + ", killed by SIGKILL"),
            std::string::npos)
      << f.dump(2);
  // doctor --fix plans exactly its launcher and live ranks (without --yes it signals nothing).
  auto plan = run_gpureap(
      {"doctor", "--fix", "--no-daemon", "--dev-root", dev.path(), "--settle", "0s", "--no-color"},
      nvml.env());
  EXPECT_EQ(plan_rows(plan.err), std::set<pid_t>(tree.begin(), tree.end())) << plan.err;
  for (pid_t p : tree) EXPECT_TRUE(is_alive(p)) << p;

  // The remedy's kill plans exactly the job: its launcher and its live ranks.
  auto kill = parse_output(run_gpureap(
      gpu_kill_args(dev, {"--tree", std::to_string(launcher), "--dry-run"}), nvml.env()));
  std::vector<pid_t> signalled;
  for (const auto& t : kill["plan"]["targets"]) {
    if (t["action"] == "signal")
      signalled.push_back(t["pid"]);
    else
      EXPECT_TRUE(t["pid"] == ranks[3] && t["action"] == "zombie") << t.dump(2);
  }
  EXPECT_EQ(sorted(signalled), sorted(tree)) << kill.dump(2);

  // Rank 2 dies between doctor --fix's two samples (rank 3's number is missing: doctor settles):
  // seen live, then a zombie its launcher has not reaped. Both are gone, and --fix --yes ends
  // exactly the launcher and ranks 0 and 1.
  BackgroundGpureap fix({"doctor", "--fix", "--yes", "--no-daemon", "--no-color", "--dev-root",
                         dev.path(), "--settle", "15s"},
                        nvml.env());
  ASSERT_TRUE(
      wait_until([&] { return wchan_of(fix.pid()).find("nanosleep") != std::string::npos; }, 60000))
      << "doctor did not wait for its second sample: " << wchan_of(fix.pid());
  ::kill(ranks[2], SIGKILL);
  ASSERT_TRUE(wait_for_state(ranks[2], 'Z'));  // its launcher waits for rank 0 first
  auto fixed = fix.wait(120000);
  const std::vector<pid_t> hung{launcher, ranks[0], ranks[1]};
  // The plan and the outcome, on stdout after the findings: each row starts with its PID.
  const size_t fixing = fixed.out.find("\nFixing:");
  ASSERT_NE(fixing, std::string::npos) << fixed.out << fixed.err;
  EXPECT_EQ(plan_rows(fixed.out.substr(fixing)), std::set<pid_t>(hung.begin(), hung.end()))
      << fixed.out << fixed.err;
  EXPECT_NE(fixed.out.find("doctor saw rank 2 (PID " + std::to_string(ranks[2]) +
                           ") end between its two samples"),
            std::string::npos)
      << fixed.out;
  EXPECT_NE((fixed.out + fixed.err)
                .find("ranks 2, 3 of job PID " + std::to_string(launcher) + " (python3, user "),
            std::string::npos)
      << fixed.out << fixed.err;
  // The launcher is our child: it stays a zombie until reaped.
  for (pid_t p : hung)
    EXPECT_TRUE(wait_until([&] { return !is_alive(p); }, 60000)) << p << " outlived doctor --fix";
  for (pid_t p : others) EXPECT_TRUE(is_alive(p)) << p;
  EXPECT_TRUE(is_alive(elastic.pid())) << "doctor --fix ended the torchrun job\n" << fixed.err;
  auto restarted = pids_after(elastic, "ready", 2);
  ASSERT_EQ(restarted.size(), 2u) << "torchrun did not restart its ranks";
  strays.pids.insert(strays.pids.end(), restarted.begin(), restarted.end());
  for (pid_t p : restarted) {
    EXPECT_NE(environ_of(p).find("TORCHELASTIC_RESTART_COUNT=1\n"), std::string::npos) << p;
  }
}

// The daemon watches the rank-by-rank job from its start: when rank 3 is SIGKILLed it saw the
// rank end, so its finding says how and when, turns critical after stalled_job_critical_after,
// and the metrics, the `stalled-job` policy condition and its snapshot name exactly that job.
TEST(PytorchJobs, TheDaemonSawTheRankDieAndSaysHowAndWhen) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  FakeDevRoot dev;
  for (const char* name : {"nvidia2", "nvidia3"}) std::ofstream(dev.dev(name)) << "stand-in\n";
  Child healthy = holding(dev, "nvidia3");
  const std::string per_rank = dev.dev("nvidia") + "{}";
  PythonJob job(rank_launcher_args(per_rank, 3));
  KillStrays strays;
  const std::vector<pid_t> ranks = ranks_holding(job, strays, per_rank);
  if (ranks.empty()) return;
  const pid_t launcher = job.pid();
  std::vector<nlohmann::json> gpus = rank_per_gpu(ranks, 3, 32 * GiB);
  gpus.push_back(nvml_gpu(3, {{{"pid", healthy.pid()}, {"used_bytes", 2 * GiB}}}));
  FakeNvml nvml(nlohmann::json{{"gpus", gpus}});
  TempDir cfg;
  std::ofstream(cfg.file("config.toml"))
      << "interval = \"200ms\"\nholder_scan_interval = \"200ms\"\n"
      << "stalled_job_critical_after = \"2s\"\n"
      << "audit_log = \"" << cfg.file("audit.jsonl") << "\"\n"
      << "[[policy]]\nname = \"hung\"\nanomalies = [\"stalled-job\"]\nafter = \"1h\"\n";
  DaemonProcess d({"--config", cfg.file("config.toml"), "--dev-root", dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  const std::string job_series = "gpureap_job_ranks{launcher_pid=\"" + std::to_string(launcher);
  // The daemon has seen the four ranks live before one dies.
  ASSERT_TRUE(wait_until(
      [&] {
        auto body = d.get("/metrics").body;
        return body.find(job_series) != std::string::npos &&
               body.find("state=\"live\"} 4") != std::string::npos;
      },
      30000))
      << d.get("/metrics").body;

  ::kill(ranks[3], SIGKILL);  // while it loads: ranks 0-2 wait for it in the group's set-up
  ASSERT_TRUE(wait_for_state(ranks[3], 'Z'));
  nlohmann::json f;
  ASSERT_TRUE(wait_until(
      [&] {
        auto doc = nlohmann::json::parse(d.get("/api/v1/findings").body, nullptr, false);
        if (!doc.is_object()) return false;
        for (const auto& x : doc["findings"])
          if (x["code"] == "stalled-job") f = x;
        return f.is_object() && f["severity"] == "critical";
      },
      30000))
      << f.dump(2) << d.log();
  const std::string summary = f["summary"];
  EXPECT_EQ(summary.find("rank 3 of job PID " + std::to_string(launcher) + " (python3, user "), 0u)
      << summary;
  EXPECT_NE(summary.find(") exited with SIGKILL "), std::string::npos) << summary;
  EXPECT_NE(summary.find(" ago; ranks 0\u20132 still hold 96 GiB on GPUs 0\u20132 and are "
                         "probably waiting for it"),
            std::string::npos)
      << summary;
  EXPECT_NE(f["evidence"].dump().find("the daemon saw rank 3 (PID " + std::to_string(ranks[3]) +
                                      ") end "),
            std::string::npos)
      << f.dump(2);
  const std::vector<pid_t> hung{launcher, ranks[0], ranks[1], ranks[2]};
  EXPECT_EQ(sorted(pids(f["pids"])), sorted(hung)) << f.dump(2);

  // /metrics: one stalled series, the job's, at the finding's severity.
  auto metrics = d.get("/metrics").body;
  EXPECT_NE(
      metrics.find("gpureap_stalled_job_memory_bytes{launcher_pid=\"" + std::to_string(launcher)),
      std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("severity=\"critical\"} 103079215104"), std::string::npos) << metrics;
  size_t stalled_series = 0;
  for (size_t at = metrics.find("\ngpureap_stalled_job_memory_bytes{"); at != std::string::npos;
       at = metrics.find("\ngpureap_stalled_job_memory_bytes{", at + 1))
    ++stalled_series;
  EXPECT_EQ(stalled_series, 1u) << metrics;

  // The policy matches exactly the job's live ranks: not the healthy holder.
  nlohmann::json pol;
  ASSERT_TRUE(wait_until([&] {
    pol = nlohmann::json::parse(d.get("/api/v1/policies").body, nullptr, false);
    return pol.is_object() && pol["policies"][0]["matching"] == 3;
  })) << pol.dump(2);
  std::vector<pid_t> matched;
  for (const auto& p : pol["policies"][0]["processes"]) matched.push_back(p["pid"]);
  EXPECT_EQ(sorted(matched), sorted(std::vector<pid_t>{ranks[0], ranks[1], ranks[2]}))
      << pol.dump(2);

  // The daemon's snapshot (ps's document) marks the job's live ranks, and no other process; so
  // does a one-shot ps, which never saw rank 3 live: its launcher has not reaped it, and the
  // kernel keeps how it ended (SIGKILL) and whose it was. ps names the gone rank and the command
  // that ends the job.
  auto served = nlohmann::json::parse(d.get("/api/v1/snapshot").body, nullptr, false);
  ASSERT_TRUE(served.is_object()) << d.get("/api/v1/snapshot").body;
  auto own = parse_output(run_gpureap({"ps", "--json", "--dev-root", dev.path()}, nvml.env()));
  for (auto* doc : {&served, &own})
    for (const auto& row : (*doc)["processes"]) {
      const pid_t pid = row["pid"];
      const bool rank = pid == ranks[0] || pid == ranks[1] || pid == ranks[2];
      EXPECT_EQ(row["anomalies"].dump().find("stalled-job") != std::string::npos, rank)
          << row.dump(2);
    }
  auto ps = run_gpureap({"ps", "--dev-root", dev.path(), "--no-color"}, nvml.env());
  EXPECT_NE(ps.out.find("rank 3 of job PID " + std::to_string(launcher)), std::string::npos)
      << ps.out;
  EXPECT_NE(
      ps.out.find("`gpureap kill --tree " + std::to_string(launcher) + "` ends the whole job"),
      std::string::npos)
      << ps.out;
}

// torchrun's agent watches its ranks: when one is SIGKILLed and no restart is left, it ends the
// others (SIGTERM) and exits, so a torchrun job on one node does not hang. No doctor run while
// it settles plans any of it.
TEST(PytorchJobs, TorchrunEndsItsOwnJobWhenARankDies) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  FakeDevRoot dev;
  for (const char* name : {"nvidia2", "nvidia3"}) std::ofstream(dev.dev(name)) << "stand-in\n";
  auto args = torchrun(4, 0, free_port());
  args.insert(args.end(), {pytorch_script("gloo_rank.py"), dev.dev("nvidia") + "{}"});
  PythonJob agent(args);
  auto ranks = pids_after(agent, "ready", 4);
  ASSERT_EQ(ranks.size(), 4u) << "torchrun's ranks did not start";
  KillStrays strays{ranks};
  for (pid_t r : ranks) {
    EXPECT_EQ(parent_of(r), agent.pid());
    EXPECT_NE(environ_of(r).find("TORCHELASTIC_MAX_RESTARTS=0\n"), std::string::npos);
  }
  FakeNvml nvml(nlohmann::json{{"gpus", {nvml_gpu(0, nlohmann::json::array())}}});
  ::kill(ranks[3], SIGKILL);
  auto settled = [&] {
    auto d = parse_output(
        run_gpureap({"doctor", "--json", "--dev-root", dev.path(), "--settle", "0s"}, nvml.env()));
    EXPECT_EQ(finding(d, "stalled-job"), nullptr) << d["findings"].dump(2);
    return std::none_of(ranks.begin(), ranks.end(), is_alive);
  };
  EXPECT_TRUE(wait_until(settled, 120000)) << "torchrun left ranks running";
  EXPECT_TRUE(wait_gone(agent.pid(), 60000) || state_of(agent.pid()) == 'Z');
}

// torch.multiprocessing.spawn losing a rank: its launcher waits on every rank, so when one is
// SIGKILLed it ends the others and exits. The ranks are the launcher's children
// (the spawn start method) with no rank labels in their environment; no look while the job
// settles names it stalled, and nothing of it is left.
TEST(PytorchJobs, MpSpawnEndsItsOwnJobWhenARankDies) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  FakeDevRoot dev;
  PythonJob launcher({pytorch_script("mp_spawn_job.py"), "2", std::to_string(free_port()),
                      dev.dev("nvidia") + "{}"});
  auto ranks = pids_after(launcher, "ready", 2);
  ASSERT_EQ(ranks.size(), 2u) << "mp.spawn's ranks did not start";
  KillStrays strays{ranks};
  for (pid_t r : ranks) {
    EXPECT_EQ(parent_of(r), launcher.pid());
    EXPECT_EQ(environ_of(r).find("LOCAL_RANK="), std::string::npos) << r;
  }
  FakeNvml nvml(nlohmann::json{{"gpus",
                                {nvml_gpu(0, {{{"pid", ranks[0]}, {"used_bytes", 8 * GiB}}}),
                                 nvml_gpu(1, {{{"pid", ranks[1]}, {"used_bytes", 8 * GiB}}})}}});
  ::kill(ranks[1], SIGKILL);
  auto settled = [&] {
    auto ps = parse_output(run_gpureap({"ps", "--json", "--dev-root", dev.path()}, nvml.env()));
    for (const auto& row : ps["processes"]) {
      EXPECT_EQ(row["anomalies"].dump().find("stalled-job"), std::string::npos) << row.dump(2);
    }
    auto d = parse_output(
        run_gpureap({"doctor", "--json", "--dev-root", dev.path(), "--settle", "0s"}, nvml.env()));
    EXPECT_EQ(finding(d, "stalled-job"), nullptr) << d["findings"].dump(2);
    return !is_alive(ranks[0]);
  };
  EXPECT_TRUE(wait_until(settled, 120000)) << "mp.spawn left rank 0 running";
  // Our child: it stays a zombie until the test reaps it.
  EXPECT_TRUE(wait_until([&] { return state_of(launcher.pid()) == 'Z'; }, 60000))
      << "the launcher did not exit";
}

// `gpureap run --fail-fast` around the rank-by-rank job: when rank 3 is SIGKILLed, ranks 0-2
// would wait in the group's set-up for the rest of their timeout; gpureap ends the whole job
// after the grace and says which rank failed.
TEST(PytorchJobs, RunFailFastEndsAGlooJobThatHangsAfterARankDies) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  FakeDevRoot dev;
  for (const char* name : {"nvidia2", "nvidia3"}) std::ofstream(dev.dev(name)) << "stand-in\n";
  TempDir dir;
  FakeNvml nvml(nlohmann::json{{"gpus", {nvml_gpu(0, nlohmann::json::array())}}});
  std::vector<std::string> args{
      "--dev-root", dev.path(), "run", "--fail-fast", "--fail-fast-grace",
      "1s",         "--grace",  "5s",  "--report",    dir.file("report.json"),
      "--",         kPython};
  for (auto& a : rank_launcher_args(dev.dev("nvidia") + "{}", 3)) args.push_back(std::move(a));
  BackgroundGpureap run(args, nvml.env());
  std::vector<pid_t> ranks;
  for (int i = 0; i < 4; ++i) {
    pid_t r = 0;
    ASSERT_TRUE(
        wait_until([&] { return (r = holder_of(dev.dev("nvidia" + std::to_string(i)))); }, 120000))
        << "rank " << i << " did not open its GPU";
    ranks.push_back(r);
  }
  KillStrays strays{ranks};
  ::kill(ranks[3], SIGKILL);
  auto result = run.wait(120000);
  auto rep = report_of(dir);
  EXPECT_EQ(rep["stop"]["reason"], "fail-fast") << rep.dump(2);
  ASSERT_TRUE(rep["failed"].is_object()) << rep.dump(2) << result.err;
  EXPECT_EQ(rep["failed"]["pid"], ranks[3]);
  EXPECT_EQ(rep["failed"]["signal"], "SIGKILL");
  EXPECT_EQ(rep["failed"]["ended_job"], true);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(is_alive(ranks[static_cast<size_t>(i)])) << i;
  EXPECT_NE(result.err.find("PID " + std::to_string(ranks[3]) + " (python3) was killed by SIGKILL"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(rep["release"]["still_held"]["files"], nlohmann::json::array()) << rep.dump(2);
}

}  // namespace
}  // namespace gpureap::testing
