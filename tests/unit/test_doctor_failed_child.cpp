// A launcher's zombie child that failed (core::FailedChild): the kernel's word, kept for the
// launcher until it reaps it, that a process of the job was killed by a signal or exited
// nonzero. With a rank number missing from both of doctor's samples, the job is stalled, on a
// one-shot look as on the daemon's; a helper that exited 0, another user's child, one whose uid
// could not be read or one in another process group stays a doubt or nothing.
#include <gtest/gtest.h>

#include "core/distributed_job.h"
#include "doctor/diagnose.h"
#include "doctor/fixable.h"
#include "snapshot_builders.h"

namespace gpureap::doctor {
namespace {
namespace failed_child {

using namespace gpureap::testing;

constexpr int kSigkill = 9;    // a wait status: killed by SIGKILL
constexpr int kStatus1 = 256;  // a wait status: exited with status 1

// A rank of alice's job under launcher 500, labelled LOCAL_RANK `n` of 4, holding GPU `n`.
core::HostProcess rank(pid_t pid, unsigned n) {
  auto p = owned(holder(pid, 500, 500, n), 1000, "alice");
  p.stat.comm = "python3";
  p.details->cmdline = {"/usr/bin/python3", "-u", "train.py"};
  p.details->wchan = "wait_woken";
  core::RankLabels l;
  l.rank = n;
  l.local_rank = n;
  l.local_world_size = 4;
  l.world_size = 4;
  p.details->rank_labels = l;
  return p;
}

// The launcher's exited child 504 that it has not reaped, as the collector reads it: its stat's
// wait status, and its owner from its status.
core::HostProcess zombie(std::optional<int> wait_status, uid_t uid = 1000,
                         const std::string& user = "alice") {
  auto z = owned(proc(504, 500, 500, 'Z'), uid, user);
  z.stat.comm = "python3";
  z.stat.wait_status = wait_status;
  z.details->cmdline.clear();
  return z;
}

// Alice's job of four whose ranks 0-2 live and hold GPUs 0-2, with `child` beside them; bob's
// healthy job of two and a lone holder on GPU 3.
std::vector<core::HostProcess> scene(core::HostProcess child) {
  auto launcher = owned(proc(500, 1, 500), 1000, "alice");
  launcher.details->cmdline = {"/usr/bin/python3", "launch.py"};
  auto bob_rank = [](pid_t pid, unsigned n) {
    auto p = owned(holder(pid, 700, 700, 3), 1001, "bob");
    core::RankLabels l;
    l.local_rank = n;
    l.local_world_size = 2;
    p.details->rank_labels = l;
    return p;
  };
  return {proc(1, 0, 1),
          launcher,
          rank(501, 0),
          rank(502, 1),
          rank(503, 2),
          std::move(child),
          owned(proc(700, 1, 700), 1001, "bob"),
          bob_rank(701, 0),
          bob_rank(702, 1),
          holder(800, 1, 800, 3)};
}

std::vector<core::Gpu> gpus() {
  return {gpu(0, 0, 32 * GiB, {listed(501, 32 * GiB)}),
          gpu(1, 1, 32 * GiB, {listed(502, 32 * GiB)}),
          gpu(2, 2, 32 * GiB, {listed(503, 32 * GiB)}),
          gpu(3, 3, 4 * GiB, {listed(701, GiB), listed(702, GiB), listed(800, 2 * GiB)})};
}

// Doctor's two samples, 5 s apart, of the same scene.
std::vector<Finding> two_samples(const std::vector<core::HostProcess>& ps,
                                 const core::KernelLog* log = nullptr) {
  SnapshotOptions later;
  later.at += std::chrono::seconds(5);
  const auto first = make_snapshot(ps, gpus());
  const auto last = make_snapshot(ps, gpus(), later);
  DoctorInput in{first, last, {}, std::nullopt, {}};
  in.kernel = log;
  return diagnose(in);
}

const Finding* of_code(const std::vector<Finding>& fs, FindingCode code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

std::string evidence_of(const Finding& f) {
  std::string out;
  for (const auto& e : f.evidence) out += e + "\n";
  return out;
}

std::vector<pid_t> planned(const std::vector<Finding>& fs) {
  std::vector<pid_t> out;
  for (const auto& x : fixable(fs)) {
    EXPECT_TRUE(x.stalled_job) << x.pid;
    out.push_back(x.pid);
  }
  return out;
}

// Which rows the join marks stalled-job (ps, top, the daemon's policies).
std::vector<pid_t> marked(const std::vector<core::HostProcess>& ps) {
  std::vector<pid_t> out;
  const auto s = make_snapshot(ps, gpus());
  for (const auto& r : s.rows)
    if (r.has(core::Anomaly::StalledJob)) out.push_back(r.pid);
  return out;
}

// Rank 3 was SIGKILLed before doctor looked, and its launcher, which waits for rank 0 first, has
// not reaped it: a one-shot doctor names the job stalled, rank 3 gone by its missing number and
// the zombie's PID and how it ended as the kernel keeps it. --fix plans exactly the launcher and
// its live ranks; bob's job and the lone holder are in no finding, mark or plan.
TEST(DoctorFailedChild, ARankKilledBeforeDoctorLookedMakesTheJobStalled) {
  const auto ps = scene(zombie(kSigkill));
  const auto jobs = core::distributed_jobs(make_snapshot(ps, gpus()).proc);
  ASSERT_EQ(jobs.size(), 2u);
  ASSERT_EQ(jobs[0].failed.size(), 1u);
  EXPECT_EQ(jobs[0].failed[0].pid, 504);
  EXPECT_EQ(jobs[0].failed[0].wait_status, kSigkill);
  EXPECT_TRUE(jobs[0].ended.empty());  // no view saw which rank it was
  EXPECT_TRUE(jobs[0].unreaped.empty());
  EXPECT_TRUE(jobs[0].stalled());
  EXPECT_FALSE(jobs[1].stalled());

  const auto fs = two_samples(ps);
  const auto* f = of_code(fs, FindingCode::StalledJob);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);  // when it ended, no one-shot look knows
  EXPECT_EQ(f->summary,
            "rank 3 of job PID 500 (p500, user alice) is gone (its launcher's child PID 504 was "
            "killed by SIGKILL); ranks 0\u20132 still hold 96 GiB on GPUs 0\u20132 and are "
            "probably waiting for it");
  EXPECT_EQ(f->pids, (std::vector<pid_t>{500, 501, 502, 503}));
  const auto evidence = evidence_of(*f);
  EXPECT_NE(evidence.find("the launcher has not reaped its child PID 504, killed by SIGKILL, in "
                          "either sample"),
            std::string::npos)
      << evidence;
  EXPECT_NE(evidence.find("nothing says which rank that child was: rank 3 is named gone"),
            std::string::npos)
      << evidence;
  EXPECT_EQ(of_code(fs, FindingCode::UnreapedZombies), nullptr);  // one story
  for (const auto& x : fs) {
    for (pid_t p : {700, 701, 702, 800}) {
      EXPECT_EQ(std::find(x.pids.begin(), x.pids.end(), p), x.pids.end()) << x.summary;
    }
  }
  EXPECT_EQ(planned(fs), (std::vector<pid_t>{500, 501, 502, 503}));
  EXPECT_EQ(marked(ps), (std::vector<pid_t>{501, 502, 503}));
}

TEST(DoctorFailedChild, ANonzeroExitIsAFailureAndTheOomKillersRecordNamesIt) {
  const auto fs = two_samples(scene(zombie(kStatus1)));
  const auto* f = of_code(fs, FindingCode::StalledJob);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->summary.find("is gone (its launcher's child PID 504 exited with status 1);"),
            std::string::npos)
      << f->summary;

  core::KernelLog log;
  log.read = true;
  core::OomKill k;
  k.pid = 504;
  k.name = "python3";
  k.uid = 1000;
  k.since_boot_usec = 20'000'000;  // 20 s after boot: after 504 started (15.04 s)
  k.text = "Out of memory: Killed process 504 (python3) total-vm:1kB, UID:1000";
  // The same number killed before 504 started: another process's record.
  core::OomKill earlier = k;
  earlier.since_boot_usec = 1'000'000;
  log.oom_kills = {earlier, k};
  const auto oom = two_samples(scene(zombie(kSigkill)), &log);
  const auto* g = of_code(oom, FindingCode::StalledJob);
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->summary.find("is gone (its launcher's child PID 504 was killed by the OOM killer);"),
            std::string::npos)
      << g->summary;
  EXPECT_NE(evidence_of(*g).find("the kernel log: the OOM killer killed PID 504: \"Out of memory: "
                                 "Killed process 504 (python3) total-vm:1kB, UID:1000\""),
            std::string::npos)
      << evidence_of(*g);
  log.oom_kills = {earlier};
  const auto without = two_samples(scene(zombie(kSigkill)), &log);
  ASSERT_NE(of_code(without, FindingCode::StalledJob), nullptr);
  EXPECT_EQ(evidence_of(*of_code(without, FindingCode::StalledJob)).find("OOM"), std::string::npos);
}

// What the kernel keeps of the zombie does not say a process of the job failed: it exited 0 (a
// helper the launcher ran, or a wait status the kernel hid from this reader), its uid could not
// be read, it ran as another user (a setuid program's child), it left the launcher's process
// group, or the kernel gave no wait status. Nothing is stalled, marked or planned; the launcher's
// own user's child (or one of unknown uid) is the doubt it was.
TEST(DoctorFailedChild, AZombieThatDoesNotSayAProcessOfTheJobFailedIsNoRanksEnd) {
  auto unknown_uid = zombie(kSigkill);
  unknown_uid.details->uid.reset();
  unknown_uid.details->user.reset();
  auto no_details = zombie(kSigkill);
  no_details.details.reset();
  auto other_group = zombie(kSigkill);
  other_group.stat.pgid = 504;
  struct Case {
    const char* what;
    core::HostProcess child;
    bool doubt;
  };
  const std::vector<Case> cases{{"exited 0", zombie(0), true},
                                {"no wait status", zombie(std::nullopt), true},
                                {"uid unknown", unknown_uid, true},
                                {"no details read", no_details, true},
                                {"another user's", zombie(kSigkill, 0, "root"), false},
                                {"another user's, status 1", zombie(kStatus1, 1001, "bob"), false},
                                {"another process group", other_group, true}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const auto ps = scene(c.child);
    const auto jobs = core::distributed_jobs(make_snapshot(ps, gpus()).proc);
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_TRUE(jobs[0].failed.empty());
    EXPECT_FALSE(jobs[0].stalled());
    const auto fs = two_samples(ps);
    EXPECT_EQ(of_code(fs, FindingCode::StalledJob), nullptr);
    EXPECT_TRUE(planned(fs).empty());
    EXPECT_TRUE(marked(ps).empty());
    const auto* doubt = of_code(fs, FindingCode::UnreapedZombies);
    EXPECT_EQ(doubt != nullptr, c.doubt);
    if (doubt) {
      EXPECT_EQ(doubt->pids, std::vector<pid_t>{500});
    }
  }
}

// A failed helper beside a whole job (every rank number lives) says nothing about the ranks; and
// a failure doctor saw in its second sample only, or a number missing only there, may be one the
// launcher is about to answer (reap it, start the rank): neither is a stalled job.
TEST(DoctorFailedChild, AFailureWithNoRankMissingFromBothSamplesIsNoStalledJob) {
  auto whole = scene(zombie(kStatus1));
  whole.push_back(rank(505, 3));
  EXPECT_EQ(of_code(two_samples(whole), FindingCode::StalledJob), nullptr);
  EXPECT_TRUE(marked(whole).empty());

  const auto ps = scene(zombie(kSigkill));
  auto before = ps;
  std::erase_if(before, [](const core::HostProcess& p) { return p.stat.pid == 504; });
  SnapshotOptions later;
  later.at += std::chrono::seconds(5);
  const auto last = make_snapshot(ps, gpus(), later);
  const auto fresh = diagnose({make_snapshot(before, gpus()), last, {}, std::nullopt, {}});
  EXPECT_EQ(of_code(fresh, FindingCode::StalledJob), nullptr);
  EXPECT_TRUE(planned(fresh).empty());

  auto starting = ps;
  starting.push_back(rank(505, 3));  // rank 3 lived in the first sample
  const auto missing_now = diagnose({make_snapshot(starting, gpus()), last, {}, std::nullopt, {}});
  EXPECT_EQ(of_code(missing_now, FindingCode::StalledJob), nullptr);
  EXPECT_TRUE(planned(missing_now).empty());
}

// The daemon's view goes through the same rule: with its record of rank 3's end the summary says
// how and when, as before; without one (a daemon started after the rank died) the zombie's wait
// status says the job failed, as on a one-shot look.
TEST(DoctorFailedChild, TheDaemonsViewFollowsTheSameRule) {
  const auto ps = scene(zombie(kSigkill));
  SnapshotOptions o;
  o.boot_time = 1'700'000'000 - 10'000;
  o.rank_exits = {{500, 1500, 504, 1504, 3u, 990'000, kSigkill}};  // 100 s ago
  const auto s = make_snapshot(ps, gpus(), o);
  const auto fs = diagnose({s, s, {}, std::nullopt, {}});
  const auto* f = of_code(fs, FindingCode::StalledJob);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->summary.find("rank 3 of job PID 500 (p500, user alice) exited with SIGKILL 1 min "
                            "ago;"),
            std::string::npos)
      << f->summary;
  // Said once, by the daemon's record: not again as a failed child.
  EXPECT_EQ(evidence_of(*f).find("has not reaped its child PID 504"), std::string::npos)
      << evidence_of(*f);
  EXPECT_EQ(planned(fs), (std::vector<pid_t>{500, 501, 502, 503}));

  const auto unseen = make_snapshot(ps, gpus());
  const auto one = diagnose({unseen, unseen, {}, std::nullopt, {}});
  ASSERT_NE(of_code(one, FindingCode::StalledJob), nullptr);
  EXPECT_EQ(planned(one), (std::vector<pid_t>{500, 501, 502, 503}));
}

}  // namespace failed_child
}  // namespace
}  // namespace gpureap::doctor
