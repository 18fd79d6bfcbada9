// What makes a distributed job stalled, tried with real PyTorch jobs (gloo, CPU): the kernel's word
// that a rank ended, never the ranks' labels alone. A healthy job that is slow to start its last
// rank, one whose ranks run under two launchers in two PID namespaces, one with a paused rank,
// and another user's processes that copy a job's environment, command line and name and connect
// to its rendezvous port: none is called stalled, and no plan ends any of them. A dead rank's PID
// that another user's look-alike gets is never the job's.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "container_machine.h"
#include "pytorch_job.h"
#include "support.h"

namespace gpureap::testing {
namespace {
namespace job_claims {

// The live children of `parent`, from /proc.
std::vector<pid_t> live_children(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    if (parent_of(pid) == parent && is_alive(pid)) out.push_back(pid);
  }
  return sorted(out);
}

// Runs in a PythonJob's child before its exec: the program becomes PID 1 of a PID namespace of
// its own, as a container's entrypoint is, under this child (a container runtime's shim).
void enter_own_pid_namespace() {
  if (::unshare(CLONE_NEWPID) != 0) ::_exit(kNoPidNamespace);
  const pid_t init = ::fork();
  if (init < 0) ::_exit(1);
  if (init == 0) return;
  int status = 0;
  ::waitpid(init, &status, 0);
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

std::vector<std::string> part_launcher(int first, int count, int total, int port,
                                       const std::string& gate, const std::string& pattern) {
  return {pytorch_script("part_launcher.py"),
          std::to_string(first),
          std::to_string(count),
          std::to_string(total),
          std::to_string(port),
          gate,
          kPython,
          pytorch_script("gloo_rank.py"),
          pattern};
}

// The host PIDs of the processes that hold `pattern`'s files for local ranks first..first+n-1.
std::vector<pid_t> rank_holders(const std::string& pattern, size_t first, size_t n) {
  std::vector<pid_t> out;
  for (size_t i = first; i < first + n; ++i) {
    std::string path = pattern;
    path.replace(path.find("{}"), 2, std::to_string(i));
    pid_t p = 0;
    if (!wait_until([&] { return (p = holder_of(path)) != 0; }, 120000)) return {};
    out.push_back(p);
  }
  return out;
}

std::string environ_of_pid(pid_t pid) {
  return read_text("/proc/" + std::to_string(pid) + "/environ");
}

bool names_any(const nlohmann::json& finding, const std::set<pid_t>& pids) {
  for (const auto& p : finding["pids"])
    if (pids.count(p.get<pid_t>())) return true;
  return false;
}

}  // namespace job_claims

// Three healthy jobs of one user: one whose launcher starts its last rank late (ranks 0-2 wait
// for it in the gloo group's set-up), one whose four ranks run under two launchers, each PID 1
// of a PID namespace of its own (two containers on one node: each launcher's ranks are labelled
// 0-1 and 2-3 of four), and that one with a rank paused (SIGSTOP: the others wait for it in
// their next all-reduce). Their labels leave rank numbers no live child of a launcher has, but
// no rank ended: doctor calls none stalled, ps marks none, and doctor --fix plans nothing of
// them. The late rank then starts and the job runs.
TEST(PytorchJobClaims, AJobSlowToStartSplitAcrossNamespacesOrPausedIsNotStalled) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  if (::geteuid() != 0) GTEST_SKIP() << "PID namespaces of their own need root";
  if (run_in_new_pid_namespace([] { return 0; }) == kNoPidNamespace)
    GTEST_SKIP() << "no PID namespace can be made here";
  FakeDevRoot dev;
  TempDir dir;
  for (int i : {2, 3, 10, 11, 12, 13})
    std::ofstream(dev.dev("nvidia" + std::to_string(i))) << "x\n";
  const std::string slow_files = dev.dev("nvidia") + "{}";    // nvidia0-3
  const std::string split_files = dev.dev("nvidia1") + "{}";  // nvidia10-13
  const std::string gate = dir.file("data-ready");

  PythonJob slow(job_claims::part_launcher(0, 4, 4, free_port(), gate, slow_files));
  const int split_port = free_port();
  PythonJob left(job_claims::part_launcher(0, 2, 4, split_port, "-", split_files),
                 job_claims::enter_own_pid_namespace);
  PythonJob right(job_claims::part_launcher(2, 2, 4, split_port, "-", split_files),
                  job_claims::enter_own_pid_namespace);
  KillStrays strays;
  std::vector<pid_t> launchers{slow.pid()};
  for (PythonJob* shim : {&left, &right}) {
    std::vector<pid_t> init;
    ASSERT_TRUE(wait_until([&] {
      return (init = job_claims::live_children(shim->pid())).size() == 1;
    })) << "the launcher did not start in its PID namespace";
    strays.pids.push_back(init[0]);  // its namespace's init: its end takes the ranks with it
    launchers.push_back(init[0]);
  }
  const auto slow_ranks = job_claims::rank_holders(slow_files, 0, 3);
  ASSERT_EQ(slow_ranks.size(), 3u) << "the slow job's ranks did not open their GPUs";
  strays.pids.insert(strays.pids.end(), slow_ranks.begin(), slow_ranks.end());
  const auto split_ranks = job_claims::rank_holders(split_files, 0, 4);
  ASSERT_EQ(split_ranks.size(), 4u) << "the split job's ranks did not open their GPUs";
  strays.pids.insert(strays.pids.end(), split_ranks.begin(), split_ranks.end());
  ASSERT_EQ(pids_after(left, "ready", 2).size(), 2u) << "the split job did not run";
  ASSERT_EQ(pids_after(right, "ready", 2).size(), 2u) << "the split job did not run";
  // Each launcher's ranks are its own children, in another PID namespace than ours.
  EXPECT_EQ(job_claims::live_children(launchers[1]), sorted({split_ranks[0], split_ranks[1]}));
  EXPECT_EQ(job_claims::live_children(launchers[2]), sorted({split_ranks[2], split_ranks[3]}));
  EXPECT_NE(read_text("/proc/" + std::to_string(split_ranks[0]) + "/status").find("NSpid:"),
            std::string::npos);
  ::kill(split_ranks[3], SIGSTOP);  // paused: the others wait for it in their next all-reduce
  ASSERT_TRUE(wait_for_state(split_ranks[3], 'T'));

  std::vector<nlohmann::json> gpus;
  for (int i = 0; i < 3; ++i)
    gpus.push_back(
        nvml_gpu(i, {{{"pid", slow_ranks[static_cast<size_t>(i)]}, {"used_bytes", 16 * GiB}}}));
  for (int i = 0; i < 4; ++i)
    gpus.push_back(nvml_gpu(
        10 + i, {{{"pid", split_ranks[static_cast<size_t>(i)]}, {"used_bytes", 16 * GiB}}}));
  FakeNvml nvml(nlohmann::json{{"gpus", gpus}});
  std::set<pid_t> everyone(launchers.begin(), launchers.end());
  everyone.insert(slow_ranks.begin(), slow_ranks.end());
  everyone.insert(split_ranks.begin(), split_ranks.end());

  auto d = parse_output(
      run_gpureap({"doctor", "--json", "--dev-root", dev.path(), "--settle", "500ms"}, nvml.env()));
  // The whole finding set: the paused rank is a stopped holder, and nothing else names a job.
  std::vector<std::string> about_jobs;
  for (const auto& f : d["findings"])
    if (job_claims::names_any(f, everyone)) about_jobs.push_back(f["code"]);
  EXPECT_EQ(about_jobs, std::vector<std::string>{"stopped-holder"}) << d["findings"].dump(2);
  EXPECT_EQ(finding(d, "stalled-job"), nullptr) << d["findings"].dump(2);
  auto ps = parse_output(run_gpureap({"ps", "--json", "--dev-root", dev.path()}, nvml.env()));
  for (const auto& row : ps["processes"]) {
    EXPECT_EQ(row["anomalies"].dump().find("stalled-job"), std::string::npos) << row.dump(2);
  }
  auto plan = run_gpureap(
      {"doctor", "--fix", "--dev-root", dev.path(), "--settle", "0s", "--no-color"}, nvml.env());
  EXPECT_EQ(plan_rows(plan.err), std::set<pid_t>{}) << plan.err;

  // Nothing was ended: the late rank starts and the slow job runs whole.
  std::ofstream(gate) << "go\n";
  EXPECT_EQ(pids_after(slow, "ready", 4).size(), 4u) << "the slow job did not run";
  strays.pids.push_back(job_claims::rank_holders(slow_files, 3, 1).at(0));
  for (pid_t p : everyone) EXPECT_TRUE(is_alive(p)) << p;
  ::kill(split_ranks[3], SIGCONT);
}

// User A runs a healthy two-rank job. User B (nobody) copies what names a rank: a launcher with
// one look-alike rank, and a job of B's own under a launcher whose command line says torchrun
// --nproc_per_node=4, whose processes are named python3, carry A's rank labels (RANK, LOCAL_RANK,
// WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID), hold GPU files and
// keep a TCP connection to A's rendezvous port; B's launcher also has an exited child it has not
// reaped. Nothing of it reaches A's job: no finding names A's processes. B's job is short of two
// ranks by its own labels, but no rank of it ended (the child was no rank, and a zombie keeps
// nothing that could say it was): no job is stalled, doctor says it cannot tell about B's
// launcher alone (unreaped-zombies), doctor --fix plans nothing, and the kill of B's tree holds
// B's processes alone.
TEST(PytorchJobClaims, AnotherUsersLookAlikeRanksNeitherJoinNorStallAJob) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run processes as another user";
  FakeDevRoot dev;
  ::chmod(dev.path().c_str(), 0755);
  if (!ContainerMachine::user_reaches(65534, dev.path()))
    GTEST_SKIP() << "uid 65534 cannot reach " << dev.path()
                 << " (a folder above it only root may enter, as a chroot's root made by "
                    "mktemp -d): another user's processes cannot run there";
  for (int i : {20, 21, 30, 31, 32}) {
    std::ofstream(dev.dev("nvidia" + std::to_string(i))) << "x\n";
    ::chmod(dev.dev("nvidia" + std::to_string(i)).c_str(), 0666);
  }
  const std::string a_files = dev.dev("nvidia2") + "{}";  // nvidia20-21
  const int port = free_port();
  PythonJob a(job_claims::part_launcher(0, 2, 2, port, "-", a_files));
  KillStrays strays;
  const auto a_ranks = job_claims::rank_holders(a_files, 0, 2);
  ASSERT_EQ(a_ranks.size(), 2u) << "A's ranks did not open their GPUs";
  strays.pids.insert(strays.pids.end(), a_ranks.begin(), a_ranks.end());
  ASSERT_EQ(pids_after(a, "ready", 2).size(), 2u) << "A's job did not run";

  // B's look-alikes: each opens its GPU file, connects to A's rendezvous port, says so, waits.
  // B's launcher: its command line says torchrun; each look-alike rank opens its GPU file,
  // connects to A's rendezvous port, says so and waits.
  std::string look_alike = R"PY(
import os, subprocess, sys, time
RANK = """
import os, socket, sys, time
f = open(sys.argv[1], "rb")
s = socket.create_connection(("127.0.0.1", int(os.environ["MASTER_PORT"])))
os.write(1, b"forged %d\\n" % os.getpid())
time.sleep(3600)
"""
def rank(n, dev):
    env = dict(os.environ, RANK=str(n), LOCAL_RANK=str(n), WORLD_SIZE="4", LOCAL_WORLD_SIZE="4",
               MASTER_ADDR="127.0.0.1", MASTER_PORT="@PORT@", TORCHELASTIC_RUN_ID="none")
    return subprocess.Popen([sys.executable, "-u", "-c", RANK, dev], env=env)
if sys.argv[1] == "one":
    rank(1, sys.argv[2]).wait()
else:
    ranks = [rank(0, sys.argv[-2]), rank(1, sys.argv[-1])]
    if os.fork() == 0:  # a child that exits, never reaped
        os._exit(0)
    time.sleep(3600)
)PY";
  look_alike.replace(look_alike.find("@PORT@"), 6, std::to_string(port));
  auto as_b = [] {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(1);
  };
  PythonJob b_job({"-c", look_alike, "/usr/bin/torchrun", "--nproc_per_node=4", dev.dev("nvidia30"),
                   dev.dev("nvidia31")},
                  as_b);
  PythonJob b_one({"-c", look_alike, "one", dev.dev("nvidia32")}, as_b);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(b_job.numbers_after("forged").size(), 1u) << "B's look-alike ranks did not start";
  // Rank 0 holds nvidia30, rank 1 nvidia31 (they say so in either order).
  const std::vector<pid_t> b_ranks{holder_of(dev.dev("nvidia30")), holder_of(dev.dev("nvidia31"))};
  const auto b_one_rank = b_one.numbers_after("forged");
  ASSERT_EQ(b_one_rank.size(), 1u) << "B's second launcher's look-alike did not start";
  strays.pids.insert(strays.pids.end(), b_ranks.begin(), b_ranks.end());
  strays.pids.push_back(static_cast<pid_t>(b_one_rank[0]));
  EXPECT_EQ(job_claims::live_children(b_job.pid()), sorted(b_ranks));
  // The child B's launcher does not reap has exited.
  ASSERT_TRUE(wait_until([&] {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") == std::string::npos &&
          parent_of(std::stoi(name)) == b_job.pid() && state_of(std::stoi(name)) == 'Z')
        return true;
    }
    return false;
  }));
  const std::set<pid_t> a_side{a.pid(), a_ranks[0], a_ranks[1]};
  ASSERT_EQ(job_claims::live_children(a.pid()), sorted({a_ranks[0], a_ranks[1]}));
  const std::set<pid_t> b_side{b_job.pid(), b_ranks[0], b_ranks[1]};

  std::vector<nlohmann::json> gpus{nvml_gpu(20, {{{"pid", a_ranks[0]}, {"used_bytes", 8 * GiB}}}),
                                   nvml_gpu(21, {{{"pid", a_ranks[1]}, {"used_bytes", 8 * GiB}}}),
                                   nvml_gpu(30, {{{"pid", b_ranks[0]}, {"used_bytes", GiB}}}),
                                   nvml_gpu(31, {{{"pid", b_ranks[1]}, {"used_bytes", GiB}}}),
                                   nvml_gpu(32, {{{"pid", b_one_rank[0]}, {"used_bytes", GiB}}})};
  FakeNvml nvml(nlohmann::json{{"gpus", gpus}});
  auto d = parse_output(
      run_gpureap({"doctor", "--json", "--dev-root", dev.path(), "--settle", "500ms"}, nvml.env()));
  std::vector<nlohmann::json> about_jobs;
  for (const auto& f : d["findings"]) {
    EXPECT_FALSE(job_claims::names_any(f, a_side)) << f.dump(2);
    EXPECT_NE(f["code"], "stalled-job") << f.dump(2);
    if (job_claims::names_any(f, b_side)) about_jobs.push_back(f);
  }
  ASSERT_EQ(about_jobs.size(), 1u) << d["findings"].dump(2);
  EXPECT_EQ(about_jobs[0]["code"], "unreaped-zombies") << about_jobs[0].dump(2);
  EXPECT_EQ(pids(about_jobs[0]["pids"]), std::vector<pid_t>{b_job.pid()}) << about_jobs[0].dump(2);
  EXPECT_NE(about_jobs[0]["summary"].get<std::string>().find("(torchrun, user nobody)"),
            std::string::npos)
      << about_jobs[0].dump(2);
  auto ps = parse_output(run_gpureap({"ps", "--json", "--dev-root", dev.path()}, nvml.env()));
  for (pid_t p : a_side) {
    auto row = row_of(ps, p);
    if (row.is_object()) {
      EXPECT_EQ(row["anomalies"].dump().find("stalled-job"), std::string::npos) << row.dump(2);
    }
  }
  auto kill = parse_output(run_gpureap(
      gpu_kill_args(dev, {"--tree", std::to_string(b_job.pid()), "--dry-run"}), nvml.env()));
  std::set<pid_t> signalled;
  for (const auto& t : kill["plan"]["targets"])
    if (t["action"] == "signal") signalled.insert(t["pid"].get<pid_t>());
  EXPECT_EQ(signalled, b_side) << kill.dump(2);
  auto plan = run_gpureap(
      {"doctor", "--fix", "--dev-root", dev.path(), "--settle", "0s", "--no-color"}, nvml.env());
  EXPECT_EQ(plan_rows(plan.err), std::set<pid_t>{}) << plan.err;
  for (pid_t p : a_side) EXPECT_TRUE(is_alive(p)) << p;
  for (pid_t p : b_side) EXPECT_TRUE(is_alive(p)) << p;
}

// The daemon watched a rank-by-rank job from its start; rank 0 is SIGKILLed while it loads and
// its launcher reaps it at once, and its PID is handed to another user's process that copies
// rank 0's labels and holds a GPU file. The stalled job is A's: its finding names the launcher
// and ranks 1-3, the daemon's record of rank 0's end, and never the process that has the number
// now; the remedy's kill plans exactly A's job.
TEST(PytorchJobClaims, ARanksPidGivenToAnotherUsersLookAlikeIsNeverTheJobs) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for ns_last_pid and another uid";
  FakeDevRoot dev;
  ::chmod(dev.path().c_str(), 0755);
  if (!ContainerMachine::user_reaches(65534, dev.path()))
    GTEST_SKIP() << "uid 65534 cannot reach " << dev.path()
                 << " (a folder above it only root may enter, as a chroot's root made by "
                    "mktemp -d): another user's processes cannot run there";
  for (const char* name : {"nvidia2", "nvidia3", "nvidia9"}) {
    std::ofstream(dev.dev(name)) << "x\n";
    ::chmod(dev.dev(name).c_str(), 0666);
  }
  const std::string per_rank = dev.dev("nvidia") + "{}";
  PythonJob job(rank_launcher_args(per_rank, 0));
  KillStrays strays;
  const std::vector<pid_t> ranks = ranks_holding(job, strays, per_rank);
  if (ranks.empty()) return;
  const pid_t launcher = job.pid();
  std::vector<nlohmann::json> gpus = rank_per_gpu(ranks, 4, 16 * GiB);
  FakeNvml nvml(nlohmann::json{{"gpus", gpus}});
  TempDir cfg;
  std::ofstream(cfg.file("config.toml"))
      << "interval = \"200ms\"\nholder_scan_interval = \"200ms\"\n";
  DaemonProcess d({"--config", cfg.file("config.toml"), "--dev-root", dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(wait_until(
      [&] {
        auto body = d.get("/metrics").body;
        return body.find("gpureap_job_ranks{launcher_pid=\"" + std::to_string(launcher)) !=
                   std::string::npos &&
               body.find("state=\"live\"} 4") != std::string::npos;
      },
      30000))
      << d.get("/metrics").body;

  ::kill(ranks[0], SIGKILL);  // its launcher waits for rank 0 first: reaped at once
  ASSERT_TRUE(wait_gone(ranks[0], 30000));
  const std::string labels = "LOCAL_RANK=0";
  Ready holding_file;
  const pid_t newcomer = fork_at(ranks[0], [&] {
    hold(dev.dev("nvidia9"));
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(1);
    ::setenv("RANK", "0", 1);
    ::setenv("LOCAL_RANK", "0", 1);
    ::setenv("WORLD_SIZE", "4", 1);
    ::setenv("LOCAL_WORLD_SIZE", "4", 1);
    holding_file.signal();
    ::execl("/bin/sleep", "python3", "3600", nullptr);
    ::_exit(127);
  });
  if (newcomer < 0) GTEST_SKIP() << "the kernel did not hand out PID " << ranks[0] << " again";
  strays.pids.push_back(newcomer);
  holding_file.wait();
  ASSERT_TRUE(wait_until(
      [&] { return job_claims::environ_of_pid(newcomer).find(labels) != std::string::npos; }));

  nlohmann::json f;
  nlohmann::json all;
  ASSERT_TRUE(wait_until(
      [&] {
        all = nlohmann::json::parse(d.get("/api/v1/findings").body, nullptr, false);
        if (!all.is_object()) return false;
        for (const auto& x : all["findings"])
          if (x["code"] == "stalled-job") f = x;
        return f.is_object() &&
               f["evidence"].dump().find("the daemon saw rank 0 (PID " +
                                         std::to_string(ranks[0])) != std::string::npos;
      },
      30000))
      << f.dump(2) << d.log();
  const std::set<pid_t> hung{launcher, ranks[1], ranks[2], ranks[3]};
  const auto named = pids(f["pids"]);
  EXPECT_EQ(std::set<pid_t>(named.begin(), named.end()), hung) << f.dump(2);
  size_t stalled = 0;
  for (const auto& x : all["findings"]) {
    if (x["code"] != "stalled-job") continue;
    ++stalled;
    EXPECT_FALSE(job_claims::names_any(x, {newcomer})) << x.dump(2);
  }
  EXPECT_EQ(stalled, 1u) << all.dump(2);
  auto kill = parse_output(run_gpureap(
      gpu_kill_args(dev, {"--tree", std::to_string(launcher), "--dry-run"}), nvml.env()));
  std::set<pid_t> signalled;
  for (const auto& t : kill["plan"]["targets"])
    if (t["action"] == "signal") signalled.insert(t["pid"].get<pid_t>());
  EXPECT_EQ(signalled, hung) << kill.dump(2);
  EXPECT_TRUE(is_alive(newcomer));
}

}  // namespace
}  // namespace gpureap::testing
