// What makes a real PyTorch job (gloo, CPU) stalled: the kernel's word that one of its ranks
// ended, or that a process of it failed, never an exited child of its launcher alone. A zombie
// keeps its PID, start time, uid, group and wait status, but not the environment and the files
// that made it a rank: a helper the launcher ran (nvidia-smi, a short script) and has not reaped
// looks the same. A healthy job whose last rank has yet to start, with helpers that exited 0,
// paused, one whose ranks all run beside a helper that failed, and one beside another user who
// tries to look like a part of it, is never called stalled, marked or planned.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "container_machine.h"
#include "pytorch_job.h"
#include "support.h"

namespace gpureap::testing {
namespace {
namespace stalled_evidence {

bool names_any(const nlohmann::json& finding, const std::set<pid_t>& pids) {
  for (const auto& p : finding["pids"])
    if (pids.count(p.get<pid_t>())) return true;
  return false;
}

// The codes of the findings that name any of `pids`, in the order doctor gave them.
std::vector<std::string> codes_naming(const nlohmann::json& doctor, const std::set<pid_t>& pids) {
  std::vector<std::string> out;
  for (const auto& f : doctor["findings"])
    if (names_any(f, pids)) out.push_back(f["code"]);
  return out;
}

nlohmann::json daemon_findings(const DaemonProcess& d) {
  auto r = d.get("/api/v1/findings");
  auto doc = nlohmann::json::parse(r.body, nullptr, false);
  if (!doc.is_object()) return nlohmann::json{{"status", r.status}, {"body", r.body}};
  return doc;
}

std::optional<long> policy_matching(const DaemonProcess& d) {
  auto doc = nlohmann::json::parse(d.get("/api/v1/policies").body, nullptr, false);
  if (!doc.is_object() || !doc["policies"].is_array() || doc["policies"].empty())
    return std::nullopt;
  return doc["policies"][0]["matching"].get<long>();
}

// The daemon's one policy: on stalled jobs, an hour after (never within a test).
constexpr const char* kHungPolicy =
    "[[policy]]\nname = \"hung\"\nanomalies = [\"stalled-job\"]\nafter = \"1h\"\n";

constexpr uid_t kUserB = 65534;

// In a child: becomes user B (nobody), readable by gpureap as any process of B's.
void become_b() {
  if (::setgroups(0, nullptr) != 0 || ::setgid(kUserB) != 0 || ::setuid(kUserB) != 0) ::_exit(1);
  ::prctl(PR_SET_DUMPABLE, 1);
}

// In a child that is user B: holds `device` (a GPU file, inherited across the exec), carries the
// labels of rank 3 of a job of four at `port`, leaves an exited child it never reaps, and runs
// sleep(1) named python3: what a rank 3 that died would leave, and what a rank 3 is called.
[[noreturn]] void look_like_rank_three(const std::string& device, int port) {
  if (::open(device.c_str(), O_RDONLY) < 0) ::_exit(98);
  for (const auto& [k, v] :
       std::vector<std::pair<const char*, std::string>>{{"RANK", "3"},
                                                        {"LOCAL_RANK", "3"},
                                                        {"WORLD_SIZE", "4"},
                                                        {"LOCAL_WORLD_SIZE", "4"},
                                                        {"MASTER_ADDR", "127.0.0.1"},
                                                        {"MASTER_PORT", std::to_string(port)}})
    ::setenv(k, v.c_str(), 1);
  if (::fork() == 0) ::_exit(0);
  ::execl("/bin/sleep", "python3", "1000", static_cast<char*>(nullptr));
  ::_exit(127);
}

pid_t pgid_of(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(paren + 2));
  std::string state;
  pid_t ppid = 0, pgid = 0;
  rest >> state >> ppid >> pgid;
  return pgid;
}

// Whether a zombie child of `parent` is there.
bool has_zombie_child(pid_t parent) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") == std::string::npos &&
        parent_of(std::stoi(name)) == parent && state_of(std::stoi(name)) == 'Z')
      return true;
  }
  return false;
}

}  // namespace stalled_evidence

// A job of four ranks started rank by rank: ranks 0-2 run and wait in the gloo group's set-up for
// rank 3, which its launcher starts once its data is ready. Meanwhile the launcher ran two helpers
// it never reaps: one that exited at once, and one that held a GPU's device file as nvidia-smi
// does (the daemon watched it as an unlabelled child that opened the GPU) and then exited. Rank 3
// is missing and the launcher has exited children: neither the daemon (its findings, its
// `stalled-job` policy), nor doctor, nor ps calls the job stalled, and doctor --fix plans
// nothing, while it runs, and while the whole job is paused (SIGSTOP). Doctor says what it cannot
// tell (unreaped-zombies, about the launcher alone). Then rank 3 starts and the job runs whole.
TEST(StalledJobEvidence, ALaunchersUnreapedHelpersNeverMakeAHealthyJobStalled) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  FakeDevRoot dev;
  for (const char* name : {"nvidia2", "nvidia3"}) std::ofstream(dev.dev(name)) << "stand-in\n";
  TempDir dir;
  const std::string gate = dir.file("data-ready");
  const std::string helper_gate = dir.file("helper-done");
  const std::string per_rank = dev.dev("nvidia") + "{}";
  PythonJob job({pytorch_script("helper_launcher.py"), "4", std::to_string(free_port()), gate,
                 dev.dev("nvidia0"), helper_gate, kPython, pytorch_script("gloo_rank.py"),
                 per_rank});
  KillStrays strays;
  const auto launched = job.numbers_after("ranks");
  std::vector<pid_t> ranks(launched.begin(), launched.end());
  strays.pids.insert(strays.pids.end(), ranks.begin(), ranks.end());
  ASSERT_EQ(ranks.size(), 3u) << "the launcher did not start its ranks";
  const auto quick = job.numbers_after("quick");
  const auto helper = job.numbers_after("helper");
  ASSERT_EQ(quick.size(), 1u) << "the launcher did not run its helpers";
  ASSERT_EQ(helper.size(), 1u) << "the launcher did not run its helpers";
  const auto smi = static_cast<pid_t>(helper[0]);
  strays.pids.push_back(smi);
  for (size_t i = 0; i < ranks.size(); ++i)
    ASSERT_TRUE(wait_until([&] { return holds_file(ranks[i], per_rank, i); }, 120000))
        << "rank " << i << " did not open its GPU";
  const pid_t launcher = job.pid();
  JobDaemon watch(rank_per_gpu(ranks, 3, 16 * GiB), dev.path(), stalled_evidence::kHungPolicy);
  const DaemonProcess& d = watch.daemon;
  const FakeNvml& nvml = watch.nvml;
  // The daemon sees the helper that holds a GPU file as one more child that opened the GPU.
  ASSERT_TRUE(watch.counts_live_ranks(launcher, 4));

  std::ofstream(helper_gate) << "done\n";
  ASSERT_TRUE(wait_for_state(smi, 'Z', 60000)) << "the helper did not exit";
  ASSERT_EQ(state_of(static_cast<pid_t>(quick[0])), 'Z');
  // The daemon saw the helper end, and its two samples show both helpers unreaped.
  ASSERT_TRUE(wait_until([&] { return live_ranks(d, launcher) == 3; }, 30000))
      << d.get("/metrics").body;
  nlohmann::json served;
  ASSERT_TRUE(wait_until(
      [&] {
        served = stalled_evidence::daemon_findings(d);
        for (const auto& f : served["findings"])
          if (f["code"] == "unreaped-zombies" && f["pids"] == nlohmann::json::array({launcher}))
            return true;
        return false;
      },
      30000))
      << served.dump(2) << d.log();
  const std::set<pid_t> job_side{launcher, ranks[0], ranks[1],
                                 ranks[2], smi,      static_cast<pid_t>(quick[0])};
  EXPECT_EQ(stalled_evidence::codes_naming(served, job_side),
            std::vector<std::string>{"unreaped-zombies"})
      << served.dump(2);
  EXPECT_EQ(stalled_evidence::policy_matching(d), 0);

  auto one_look = [&](const std::set<std::string>& expected_codes) {
    auto doc = parse_output(run_gpureap(
        {"doctor", "--json", "--no-daemon", "--dev-root", dev.path(), "--settle", "300ms"},
        nvml.env()));
    const auto codes = stalled_evidence::codes_naming(doc, job_side);
    EXPECT_EQ(std::set<std::string>(codes.begin(), codes.end()), expected_codes)
        << doc["findings"].dump(2);
    EXPECT_EQ(std::count(codes.begin(), codes.end(), "unreaped-zombies"), 1)
        << doc["findings"].dump(2);
    for (const auto& f : doc["findings"]) {
      if (f["code"] != "unreaped-zombies") continue;
      EXPECT_EQ(f["pids"], nlohmann::json::array({launcher})) << f.dump(2);
      EXPECT_NE(f["summary"].get<std::string>().find("does not reap its exited children"),
                std::string::npos)
          << f.dump(2);
      EXPECT_NE(f["summary"].get<std::string>().find("rank 3 of the job is missing"),
                std::string::npos)
          << f.dump(2);
    }
    auto ps = parse_output(run_gpureap({"ps", "--json", "--dev-root", dev.path()}, nvml.env()));
    for (const auto& row : ps["processes"]) {
      EXPECT_EQ(row["anomalies"].dump().find("stalled-job"), std::string::npos) << row.dump(2);
    }
    auto plan = run_gpureap({"doctor", "--fix", "--no-daemon", "--dev-root", dev.path(), "--settle",
                             "0s", "--no-color"},
                            nvml.env());
    EXPECT_EQ(plan_rows(plan.err), std::set<pid_t>{}) << plan.err;
  };
  one_look({"unreaped-zombies"});

  // Paused whole (Ctrl-Z on its group): the ranks are stopped holders, and that is all.
  ASSERT_EQ(::kill(-launcher, SIGSTOP), 0);
  for (pid_t p : {launcher, ranks[0], ranks[1], ranks[2]})
    ASSERT_TRUE(wait_for_state(p, 'T', 30000)) << p;
  one_look({"stopped-holder", "unreaped-zombies"});
  EXPECT_EQ(stalled_evidence::policy_matching(d), 0);
  ::kill(-launcher, SIGCONT);

  // Nothing was ended: rank 3 starts and the job runs whole.
  std::ofstream(gate) << "go\n";
  const auto started = job.numbers_after("started");
  ASSERT_EQ(started.size(), 1u) << "the launcher did not start rank 3";
  strays.pids.push_back(static_cast<pid_t>(started[0]));
  EXPECT_EQ(pids_after(job, "ready", 4).size(), 4u) << "the job did not run";
  for (pid_t p : {launcher, ranks[0], ranks[1], ranks[2]}) EXPECT_TRUE(is_alive(p)) << p;
  EXPECT_EQ(stalled_evidence::policy_matching(d), 0);
  const auto findings = stalled_evidence::daemon_findings(d);  // kept: the loop reads into it
  for (const auto& f : findings["findings"]) {
    EXPECT_NE(f["code"], "stalled-job") << f.dump(2);
  }
}

// A healthy job of four whose ranks all run, under a launcher that ran a helper that exited with
// status 1 and never reaped it (as nvidia-smi fails where the driver is not loaded): the kernel's
// word that a child of the launcher failed, but every rank number lives, so no rank is gone.
// Neither the daemon (its findings, its `stalled-job` policy), nor doctor, nor ps calls the job
// stalled or names it at all, doctor --fix plans nothing, and the job runs on.
TEST(StalledJobEvidence, AHealthyJobsFailedHelperNeverMakesItStalled) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  FakeDevRoot dev;
  for (const char* name : {"nvidia2", "nvidia3"}) std::ofstream(dev.dev(name)) << "stand-in\n";
  const std::string per_rank = dev.dev("nvidia") + "{}";
  PythonJob job(rank_launcher_args(per_rank, -1, {"--helper-status", "1"}));
  KillStrays strays;
  const auto launched = job.numbers_after("ranks");
  const std::vector<pid_t> ranks(launched.begin(), launched.end());
  strays.pids.insert(strays.pids.end(), ranks.begin(), ranks.end());
  ASSERT_EQ(ranks.size(), 4u) << "the launcher did not start its ranks";
  const auto helper = job.numbers_after("helper");
  ASSERT_EQ(helper.size(), 1u) << "the launcher did not run its helper";
  const auto failed = static_cast<pid_t>(helper[0]);
  ASSERT_TRUE(wait_for_state(failed, 'Z', 60000)) << "the helper did not exit";
  ASSERT_EQ(proc_status_field(failed, "Uid"), proc_status_field(job.pid(), "Uid"));
  ASSERT_EQ(pids_after(job, "ready", 4).size(), 4u) << "the job did not run";
  const pid_t launcher = job.pid();
  JobDaemon watch(rank_per_gpu(ranks, 4, 16 * GiB), dev.path(), stalled_evidence::kHungPolicy);
  const DaemonProcess& d = watch.daemon;
  const FakeNvml& nvml = watch.nvml;
  ASSERT_TRUE(watch.counts_live_ranks(launcher, 4));
  // A sample taken after the one that counted the ranks, the helper a zombie in both.
  const auto seen = stalled_evidence::daemon_findings(d)["snapshot"]["timestamp"];
  ASSERT_TRUE(wait_until(
      [&] { return stalled_evidence::daemon_findings(d)["snapshot"]["timestamp"] != seen; }));

  const std::set<pid_t> job_side{launcher, ranks[0], ranks[1], ranks[2], ranks[3], failed};
  const auto served = stalled_evidence::daemon_findings(d);
  EXPECT_EQ(stalled_evidence::codes_naming(served, job_side), std::vector<std::string>{})
      << served.dump(2);
  EXPECT_EQ(stalled_evidence::policy_matching(d), 0);
  auto doc = parse_output(run_gpureap(
      {"doctor", "--json", "--no-daemon", "--dev-root", dev.path(), "--settle", "300ms"},
      nvml.env()));
  EXPECT_EQ(stalled_evidence::codes_naming(doc, job_side), std::vector<std::string>{})
      << doc["findings"].dump(2);
  auto ps = parse_output(run_gpureap({"ps", "--json", "--dev-root", dev.path()}, nvml.env()));
  for (const auto& row : ps["processes"]) {
    EXPECT_EQ(row["anomalies"].dump().find("stalled-job"), std::string::npos) << row.dump(2);
  }
  auto plan = run_gpureap(
      {"doctor", "--fix", "--no-daemon", "--dev-root", dev.path(), "--settle", "0s", "--no-color"},
      nvml.env());
  EXPECT_EQ(plan_rows(plan.out + plan.err), std::set<pid_t>{}) << plan.out << plan.err;
  for (pid_t p : {launcher, ranks[0], ranks[1], ranks[2], ranks[3]}) EXPECT_TRUE(is_alive(p)) << p;
  EXPECT_EQ(state_of(failed), 'Z') << "the helper was reaped: the scene is not what it claims";
}

// User A's healthy job waits for its rank 3 (its data is not ready), holding GPUs 0-2, watched by
// the daemon and its stalled-job policy. User B (nobody) tries to make it look stalled:
// - a process of B's in A's session (as one `sudo -u nobody` starts from A's terminal) joins the
//   job's process group, which the kernel allows within a session, holds a GPU file, carries
//   rank 3's labels and A's rendezvous port, is named python3, and leaves an exited child it
//   never reaps;
// - once A's launcher is gone (its ranks orphaned), a process of B's tries to take the
//   launcher's PID and do the same (the kernel keeps a number while a process group has it).
// B's processes are never children of A's launcher, and no view showed them as its ranks: no
// finding, anomaly, policy match or plan ever names A's processes, and B's are no job of A's.
TEST(StalledJobEvidence, AnotherUserCannotMakeAHealthyJobLookStalled) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run processes as another user";
  FakeDevRoot dev;
  ::chmod(dev.path().c_str(), 0755);
  if (!ContainerMachine::user_reaches(stalled_evidence::kUserB, dev.path()))
    GTEST_SKIP() << "uid 65534 cannot reach " << dev.path()
                 << " (a folder above it only root may enter, as a chroot's root made by "
                    "mktemp -d): another user's processes cannot run there";
  for (const char* name : {"nvidia2", "nvidia3"}) std::ofstream(dev.dev(name)) << "stand-in\n";
  ::chmod(dev.dev("nvidia3").c_str(), 0666);
  TempDir dir;
  const int port = free_port();
  const std::string per_rank = dev.dev("nvidia") + "{}";
  PythonJob a({pytorch_script("part_launcher.py"), "0", "4", "4", std::to_string(port),
               dir.file("data-ready"), kPython, pytorch_script("gloo_rank.py"), per_rank});
  KillStrays strays;
  std::vector<pid_t> ranks;
  for (int i = 0; i < 3; ++i) {
    const auto started = a.numbers_after("started");
    ASSERT_EQ(started.size(), 1u) << "A's launcher did not start rank " << i;
    ranks.push_back(static_cast<pid_t>(started[0]));
    strays.pids.push_back(ranks.back());
  }
  for (size_t i = 0; i < ranks.size(); ++i)
    ASSERT_TRUE(wait_until([&] { return holds_file(ranks[i], per_rank, i); }, 120000))
        << "rank " << i << " did not open its GPU";
  const pid_t launcher = a.pid();
  const std::set<pid_t> a_side{launcher, ranks[0], ranks[1], ranks[2]};
  JobDaemon watch(rank_per_gpu(ranks, 3, 16 * GiB), dev.path(), stalled_evidence::kHungPolicy);
  const DaemonProcess& d = watch.daemon;
  const FakeNvml& nvml = watch.nvml;
  ASSERT_TRUE(watch.counts_live_ranks(launcher, 3));

  // Nothing names A's processes: no finding (the daemon's and doctor's own, over a settle
  // window the daemon sampled through), no anomaly, no policy match, no plan.
  auto nothing_names_a = [&](const std::string& when) {
    SCOPED_TRACE(when);
    const auto findings = stalled_evidence::daemon_findings(d);  // kept: the loop reads into it
    for (const auto& f : findings["findings"]) {
      EXPECT_FALSE(stalled_evidence::names_any(f, a_side)) << f.dump(2);
    }
    auto doc = parse_output(
        run_gpureap({"doctor", "--json", "--dev-root", dev.path(), "--settle", "1s"}, nvml.env()));
    for (const auto& f : doc["findings"]) {
      EXPECT_FALSE(stalled_evidence::names_any(f, a_side)) << f.dump(2);
      EXPECT_NE(f["code"], "stalled-job") << f.dump(2);
    }
    auto ps = parse_output(run_gpureap({"ps", "--json", "--dev-root", dev.path()}, nvml.env()));
    for (const auto& row : ps["processes"]) {
      EXPECT_EQ(row["anomalies"].dump().find("stalled-job"), std::string::npos) << row.dump(2);
    }
    EXPECT_EQ(stalled_evidence::policy_matching(d), 0);
    auto plan = run_gpureap(
        {"doctor", "--fix", "--dev-root", dev.path(), "--settle", "0s", "--no-color"}, nvml.env());
    for (pid_t p : plan_rows(plan.out + plan.err)) {
      EXPECT_EQ(a_side.count(p), 0u) << p << " planned\n" << plan.out << plan.err;
    }
  };

  Child in_group([&] {
    stalled_evidence::become_b();
    if (::setpgid(0, launcher) != 0) ::_exit(2);
    stalled_evidence::look_like_rank_three(dev.dev("nvidia3"), port);
  });
  strays.pids.push_back(in_group.pid());
  ASSERT_TRUE(wait_until([&] {
    return read_text("/proc/" + std::to_string(in_group.pid()) + "/environ").find("LOCAL_RANK=3") !=
               std::string::npos &&
           stalled_evidence::has_zombie_child(in_group.pid());
  })) << "B's process did not join A's group (state "
      << state_of(in_group.pid()) << ")";
  ASSERT_EQ(stalled_evidence::pgid_of(in_group.pid()), launcher);
  // The daemon samples B's process in A's group before anything is asked.
  const auto seen = stalled_evidence::daemon_findings(d)["snapshot"]["timestamp"];
  ASSERT_TRUE(wait_until(
      [&] { return stalled_evidence::daemon_findings(d)["snapshot"]["timestamp"] != seen; }));
  nothing_names_a("B's process in A's group");

  // A's launcher ends (its ranks run on, orphaned); B takes its number.
  a.child().kill_and_reap();
  for (pid_t r : ranks) ASSERT_TRUE(wait_until([&] { return parent_of(r) != launcher; })) << r;
  // A number that names a live process group stays its group's: the kernel hands it to no new
  // process while the orphaned ranks (and B's process) are in the group. Where it did, B's
  // process under it would be no launcher of A's ranks either: their parent is another now.
  Ready labelled;
  const pid_t newcomer = fork_at(launcher, [&] {
    stalled_evidence::become_b();
    labelled.signal();
    stalled_evidence::look_like_rank_three(dev.dev("nvidia3"), port);
  });
  if (newcomer > 0) {
    strays.pids.push_back(newcomer);
    labelled.wait();
    ASSERT_TRUE(wait_until([&] { return stalled_evidence::has_zombie_child(newcomer); }));
  }
  const auto later = stalled_evidence::daemon_findings(d)["snapshot"]["timestamp"];
  ASSERT_TRUE(wait_until(
      [&] { return stalled_evidence::daemon_findings(d)["snapshot"]["timestamp"] != later; }));
  nothing_names_a(newcomer > 0 ? "B's process under A's launcher's PID" : "A's launcher gone");
  for (pid_t r : ranks) EXPECT_TRUE(is_alive(r)) << r;
}

}  // namespace
}  // namespace gpureap::testing
