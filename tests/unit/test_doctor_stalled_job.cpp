// Distributed jobs by the kernel's word (core/distributed_job) and doctor's stalled-job rule.
#include <gtest/gtest.h>

#include "core/distributed_job.h"
#include "doctor/diagnose.h"
#include "doctor/fixable.h"
#include "doctor/settle.h"
#include "snapshot_builders.h"

namespace gpureap::doctor {
namespace {

using namespace gpureap::testing;

// A rank of user 1000: its own GPU file (an open file of its own), its launcher's group.
core::HostProcess job_rank(pid_t pid, pid_t launcher, std::optional<unsigned> local_rank,
                           unsigned local_world_size = 4, unsigned minor = 0) {
  auto p = owned(holder(pid, launcher, launcher, minor), 1000, "alice");
  p.stat.comm = "python3";
  p.details->cmdline = {"/usr/bin/python3", "-u", "train.py"};
  p.details->wchan = "futex_wait_queue";
  if (local_rank) {
    core::RankLabels l;
    l.rank = *local_rank;
    l.local_rank = *local_rank;
    l.local_world_size = local_world_size;
    l.world_size = local_world_size;
    p.details->rank_labels = l;
  }
  return p;
}

core::HostProcess job_launcher(pid_t pid,
                               std::vector<std::string> argv = {"/usr/bin/python3", "launch.py"}) {
  auto p = owned(proc(pid, 1, pid), 1000, "alice");
  p.details->cmdline = std::move(argv);
  return p;
}

std::vector<core::Gpu> gpus_of_ranks(const std::vector<pid_t>& ranks) {
  std::vector<core::Gpu> out;
  for (unsigned i = 0; i < ranks.size(); ++i)
    out.push_back(gpu(i, i, 32 * GiB, {listed(ranks[i], 32 * GiB)}));
  return out;
}

std::vector<Finding> diagnose_job(const core::Snapshot& s) {
  return diagnose({s, s, {}, std::nullopt, {}});
}

const Finding* stalled_finding(const std::vector<Finding>& fs) {
  for (const auto& f : fs)
    if (f.code == FindingCode::StalledJob) return &f;
  return nullptr;
}

TEST(DistributedJobs, RanksAreALaunchersChildrenThatOpenedTheGpuThemselves) {
  auto s = make_snapshot(
      {proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0), job_rank(502, 500, 1, 4, 1),
       job_rank(503, 500, 2, 4, 2), job_rank(504, 500, 3, 4, 3),
       // rank 0's DataLoader worker: inherited its files, not a rank
       owned(holder(600, 501, 500), 1000, "alice")},
      gpus_of_ranks({501, 502, 503, 504}));
  auto jobs = core::distributed_jobs(s.proc);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].launcher, 500);
  ASSERT_EQ(jobs[0].ranks.size(), 4u);
  EXPECT_EQ(jobs[0].local_world_size, 4u);
  EXPECT_TRUE(jobs[0].missing.empty());
  EXPECT_EQ(jobs[0].members, (std::vector<pid_t>{500, 501, 502, 503, 504, 600}));
  EXPECT_EQ(stalled_finding(diagnose_job(s)), nullptr);
}

TEST(DistributedJobs, TheEnvironmentNeverMakesAProcessBelong) {
  // Labelled as rank 3 of the job, but another user's child, or started before the launcher,
  // or in another process group: not the job's rank, so rank 3 is missing.
  auto other_user = owned(job_rank(504, 500, 3), 1001, "mallory");
  auto older = job_rank(505, 500, 3);
  older.stat.start_ticks = 10;
  auto other_group = job_rank(506, 500, 3);
  other_group.stat.pgid = 506;
  // The launcher's exited child: a rank ended, on the kernel's word.
  auto s = make_snapshot({proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0),
                          job_rank(502, 500, 1, 4, 1), job_rank(503, 500, 2, 4, 2), other_user,
                          older, other_group, owned(proc(507, 500, 500, 'Z'), 1000, "alice")},
                         gpus_of_ranks({501, 502, 503}));
  auto jobs = core::distributed_jobs(s.proc);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].missing, std::vector<unsigned>{3});
  EXPECT_EQ(jobs[0].ranks.size(), 3u);
  // --fix ends the whole job: the launcher and every live descendant of its user, ranks or not
  // (its own children in another group too), never another user's process.
  auto fs = diagnose_job(s);
  const auto* f = stalled_finding(fs);
  ASSERT_NE(f, nullptr);
  std::vector<pid_t> fixed;
  for (const auto& x : fixable(fs)) fixed.push_back(x.pid);
  EXPECT_EQ(fixed, (std::vector<pid_t>{500, 501, 502, 503, 505, 506}));
}

TEST(DistributedJobs, ATrainersWorkersOrTwoLoneProcessesAreNoJob) {
  // One trainer with DataLoader workers (they inherit its files) under a shell: no job.
  auto s = make_snapshot(
      {proc(1, 0, 1), owned(proc(400, 1, 400), 1000, "alice"),
       owned(holder(401, 400, 400), 1000, "alice"), owned(holder(402, 401, 400), 1000, "alice"),
       owned(holder(403, 401, 400), 1000, "alice")},
      {gpu(0, 0, 8 * GiB, {listed(401, 8 * GiB)})});
  EXPECT_TRUE(core::distributed_jobs(s.proc).empty());
}

TEST(DoctorStalledJob, ARankGoneWhileTheOthersHoldTheirGpus) {
  auto zombie = owned(proc(504, 500, 500, 'Z'), 1000, "alice");
  auto s = make_snapshot(
      {proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0), job_rank(502, 500, 1, 4, 1),
       job_rank(503, 500, 2, 4, 2), zombie,
       // another user's healthy job and a lone holder stay out of it
       owned(proc(700, 1, 700), 1001, "bob"), owned(job_rank(701, 700, 0, 2, 3), 1001, "bob"),
       owned(job_rank(702, 700, 1, 2, 3), 1001, "bob"), holder(800, 1, 800, 3)},
      gpus_of_ranks({501, 502, 503}));
  auto fs = diagnose_job(s);
  const auto* f = stalled_finding(fs);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->summary,
            "rank 3 of job PID 500 (p500, user alice) is gone; ranks 0\u20132 still hold "
            "96 GiB on GPUs 0\u20132 and are probably waiting for it");
  EXPECT_EQ(f->pids, (std::vector<pid_t>{500, 501, 502, 503}));
  EXPECT_EQ(f->gpus, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(f->memory_bytes, 96 * GiB);
  ASSERT_EQ(f->remedy.size(), 1u);
  EXPECT_EQ(f->remedy[0].command, "gpureap kill --tree 500");
  std::string evidence;
  for (const auto& e : f->evidence) evidence += e + "\n";
  EXPECT_NE(evidence.find("has not reaped its exited child 504"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("waiting in futex_wait_queue"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("LOCAL_WORLD_SIZE label says 4"), std::string::npos) << evidence;
  // Only that job: bob's job and the lone holder are in no stalled finding, nor in --fix.
  for (const auto& x : fixable(fs)) {
    EXPECT_TRUE(x.stalled_job);
    EXPECT_LT(x.pid, 600);
  }
}

TEST(DoctorStalledJob, TorchrunsAgentSettlesItsOwnJob) {
  // torchrun's labels: its agent restarts every rank (restarts left) or ends them all.
  std::vector<core::HostProcess> ps{
      proc(1, 0, 1),
      job_launcher(500, {"/usr/bin/python3", "-m", "torch.distributed.run", "train.py"})};
  for (pid_t p : {501, 502, 503}) {
    auto r = job_rank(p, 500, static_cast<unsigned>(p - 501));
    r.details->rank_labels->restart_count = 0;
    r.details->rank_labels->max_restarts = 3;
    ps.push_back(r);
  }
  auto s = make_snapshot(ps, gpus_of_ranks({501, 502, 503}));
  auto jobs = core::distributed_jobs(s.proc);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].kind, "torchrun");
  EXPECT_EQ(jobs[0].restarts_left, 3u);
  EXPECT_EQ(jobs[0].missing, std::vector<unsigned>{3});
  EXPECT_EQ(stalled_finding(diagnose_job(s)), nullptr);
}

TEST(DoctorStalledJob, ARankMissingOnlyInTheLaterSampleMayBeStarting) {
  // First sample: rank 1 not started yet; the later one has it: no finding either way round.
  auto first = make_snapshot({proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0, 2)},
                             gpus_of_ranks({501}));
  auto last = make_snapshot(
      {proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0, 2), job_rank(502, 500, 1, 2, 1)},
      gpus_of_ranks({501, 502}));
  EXPECT_EQ(stalled_finding(diagnose({first, last, {}, std::nullopt, {}})), nullptr);
  auto gone_now = make_snapshot({proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0, 2),
                                 owned(proc(502, 500, 500, 'Z'), 1000, "alice")},
                                gpus_of_ranks({501}));
  EXPECT_EQ(stalled_finding(diagnose({last, gone_now, {}, std::nullopt, {}})), nullptr);
  EXPECT_NE(stalled_finding(diagnose({gone_now, gone_now, {}, std::nullopt, {}})), nullptr);
}

TEST(DoctorStalledJob, DoctorSettlesOnAJobWithARankMissingAndSeesTheOthersWait) {
  std::vector<core::HostProcess> ps{proc(1, 0, 1),
                                    job_launcher(500),
                                    job_rank(501, 500, 0),
                                    job_rank(502, 500, 1, 4, 1),
                                    job_rank(503, 500, 2, 4, 2),
                                    owned(proc(504, 500, 500, 'Z'), 1000, "alice")};
  auto first = make_snapshot(ps, gpus_of_ranks({501, 502, 503}));
  EXPECT_TRUE(needs_settle(first, std::nullopt));
  // 5 s later: ranks 0 and 1 used no CPU (they wait), rank 2 used 2 s of it.
  ps[4].stat.cpu_ticks += 200;
  SnapshotOptions later;
  later.at += std::chrono::seconds(5);
  auto last = make_snapshot(ps, gpus_of_ranks({501, 502, 503}), later);
  auto fs = diagnose({first, last, {}, std::nullopt, {}});
  const auto* f = stalled_finding(fs);
  ASSERT_NE(f, nullptr);
  std::string evidence;
  for (const auto& e : f->evidence) evidence += e + "\n";
  EXPECT_NE(evidence.find("rank 0, PID 501 (python3), is in state S, its main thread waiting in "
                          "futex_wait_queue, listed with 32 GiB on GPU 0, used 0 ms of CPU in "
                          "5.0 s"),
            std::string::npos)
      << evidence;
  EXPECT_NE(evidence.find("used 2000 ms of CPU in 5.0 s"), std::string::npos) << evidence;
  // A whole job, or a torchrun job, needs no second look.
  auto whole = make_snapshot(
      {proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0, 2), job_rank(502, 500, 1, 2, 1)},
      gpus_of_ranks({501, 502}));
  EXPECT_FALSE(needs_settle(whole, std::nullopt));
}

// Ticks since boot of a moment `ago` before the builders' sample time, on a host booted 10000 s
// before it (100 ticks a second).
constexpr long long kBoot = 1'700'000'000 - 10'000;
uint64_t ticks_ago(std::chrono::seconds ago) {
  return static_cast<uint64_t>((10'000 - ago.count()) * 100);
}

// The hung job as the daemon sees it: rank 3 of a srun-style job ended `ago`, by `status`.
core::Snapshot job_with_exit(std::chrono::seconds ago, std::optional<int> status) {
  SnapshotOptions o;
  o.boot_time = kBoot;
  o.rank_exits = {{500, 1500, 504, 1504, 3u, ticks_ago(ago), status}};
  auto launcher = job_launcher(500, {"/usr/bin/python3", "launch.py", "--nproc", "4"});
  return make_snapshot(
      {proc(1, 0, 1), launcher, job_rank(501, 500, 0), job_rank(502, 500, 1, 4, 1),
       job_rank(503, 500, 2, 4, 2), owned(proc(504, 500, 500, 'Z'), 1000, "alice"),
       // bob's healthy job
       owned(proc(700, 1, 700), 1001, "bob"), owned(job_rank(701, 700, 0, 2, 3), 1001, "bob"),
       owned(job_rank(702, 700, 1, 2, 3), 1001, "bob")},
      gpus_of_ranks({501, 502, 503}), o);
}

std::string evidence_of(const Finding& f) {
  std::string out;
  for (const auto& e : f.evidence) out += e + "\n";
  return out;
}

// The labels alone leave rank 3 without a live rank: it may have yet to start, or run under
// another launcher (the job's other container on this node). Without the kernel's word that a
// rank ended -- an exited child of the launcher, or the daemon's record of rank 3's end (not of a
// rank that lives again) -- nothing is stalled: no finding, no anomaly, nothing to fix.
TEST(DoctorStalledJob, LabelsAloneNeverMakeAJobStalled) {
  std::vector<core::HostProcess> ps{proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0),
                                    job_rank(502, 500, 1, 4, 1), job_rank(503, 500, 2, 4, 2)};
  SnapshotOptions o;
  o.boot_time = kBoot;
  // Rank 2 ended and its launcher started it again (PID 503): that end stalls nothing.
  o.rank_exits = {{500, 1500, 499, 1499, 2u, ticks_ago(std::chrono::minutes(3)), 9}};
  auto s = make_snapshot(ps, gpus_of_ranks({501, 502, 503}), o);
  auto jobs = core::distributed_jobs(s.proc);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].missing, std::vector<unsigned>{3});
  EXPECT_FALSE(jobs[0].rank_ended);
  EXPECT_FALSE(jobs[0].stalled());
  const auto fs = diagnose_job(s);
  EXPECT_EQ(stalled_finding(fs), nullptr);
  EXPECT_TRUE(fixable(fs).empty());
  for (const auto& r : s.rows) {
    EXPECT_FALSE(r.has(core::Anomaly::StalledJob)) << r.pid;
  }
  // The daemon saw rank 3 end: stalled.
  o.rank_exits.push_back({500, 1500, 504, 1504, 3u, ticks_ago(std::chrono::minutes(2)), 9});
  auto seen = make_snapshot(ps, gpus_of_ranks({501, 502, 503}), o);
  EXPECT_TRUE(core::distributed_jobs(seen.proc).at(0).stalled());
  EXPECT_NE(stalled_finding(diagnose_job(seen)), nullptr);
  for (pid_t p : {501, 502, 503}) {
    const auto* row = seen.row(p);
    ASSERT_NE(row, nullptr);
    EXPECT_TRUE(row->has(core::Anomaly::StalledJob)) << p;
  }
}

TEST(DoctorStalledJob, TheDaemonSawTheRankEndSaysHowAndWhen) {
  auto s = job_with_exit(std::chrono::minutes(4), 9);  // SIGKILL
  auto fs = diagnose_job(s);
  const auto* f = stalled_finding(fs);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->summary,
            "rank 3 of job PID 500 (p500, user alice) exited with SIGKILL 4 min ago; ranks "
            "0\u20132 still hold 96 GiB on GPUs 0\u20132 and are probably waiting for it");
  const auto evidence = evidence_of(*f);
  EXPECT_NE(evidence.find("the daemon saw rank 3 (PID 504) end 4 min ago, killed by SIGKILL"),
            std::string::npos)
      << evidence;
  EXPECT_NE(evidence.find("turns critical 10m00s after its first rank's end"), std::string::npos)
      << evidence;
  // Only alice's job is named.
  for (const auto& x : fs) {
    if (x.code == FindingCode::StalledJob) {
      EXPECT_EQ(x.pids.front(), 500);
    }
  }
}

TEST(DoctorStalledJob, CriticalOnceTheRankEndedLongerAgoThanConfigured) {
  auto s = job_with_exit(std::chrono::minutes(12), 1 << 8);  // exit(1)
  const auto fs = diagnose_job(s);
  const auto* f = stalled_finding(fs);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Critical);
  EXPECT_EQ(f->summary,
            "rank 3 of job PID 500 (p500, user alice) exited with status 1 12 min ago; ranks "
            "0\u20132 still hold 96 GiB on GPUs 0\u20132 and are probably waiting for it");
  EXPECT_NE(evidence_of(*f).find("end 12 min ago, exiting with status 1"), std::string::npos);
  // A longer setting: still a warning at 12 minutes.
  DoctorInput in{s, s, {}, std::nullopt, {}};
  in.stalled_job_critical_after = std::chrono::minutes(30);
  const auto longer = diagnose(in);
  ASSERT_NE(stalled_finding(longer), nullptr);
  EXPECT_EQ(stalled_finding(longer)->severity, Severity::Warning);
}

// The exit event was lost (an overflow of the events' queue): the end is dated by the first
// view that showed it, and the words say it ended no later. That view's age is the least the
// stall has lasted, which is what turns it critical.
TEST(DoctorStalledJob, AnEndNoExitEventDatedIsSaidToBeNoLaterThanItWasSeen) {
  auto s = job_with_exit(std::chrono::minutes(12), 9);
  ASSERT_EQ(s.proc.rank_exits.size(), 1u);
  s.proc.rank_exits[0].end_upper_bound = true;
  const auto fs = diagnose_job(s);
  const auto* f = stalled_finding(fs);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Critical);
  EXPECT_EQ(f->summary,
            "rank 3 of job PID 500 (p500, user alice) exited with SIGKILL no later than 12 min "
            "ago; ranks 0\u20132 still hold 96 GiB on GPUs 0\u20132 and are probably waiting for "
            "it");
  EXPECT_NE(evidence_of(*f).find("the daemon saw rank 3 (PID 504) end no later than 12 min ago "
                                 "(no exit event of the kernel dated it: /proc showed it ended "
                                 "then, and the kernel keeps no record of when), killed by "
                                 "SIGKILL"),
            std::string::npos)
      << evidence_of(*f);
}

TEST(DoctorStalledJob, AnExitOfAnotherLauncherOrAnEarlierLifeIsNotThisJobs) {
  // The record names launcher 500 with another start time (an earlier process under the PID):
  // no rank of this job is known to have ended, so nothing is stalled. With the launcher's
  // exited child, the summary says only that rank 3 is gone.
  SnapshotOptions o;
  o.boot_time = kBoot;
  o.rank_exits = {{500, 999, 504, 1504, 3u, ticks_ago(std::chrono::minutes(20)), 9}};
  std::vector<core::HostProcess> ps{proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0),
                                    job_rank(502, 500, 1, 4, 1), job_rank(503, 500, 2, 4, 2)};
  EXPECT_EQ(stalled_finding(diagnose_job(make_snapshot(ps, gpus_of_ranks({501, 502, 503}), o))),
            nullptr);
  ps.push_back(owned(proc(504, 500, 500, 'Z'), 1000, "alice"));
  auto s = make_snapshot(ps, gpus_of_ranks({501, 502, 503}), o);
  const auto fs = diagnose_job(s);
  const auto* f = stalled_finding(fs);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_NE(f->summary.find("rank 3 of job PID 500 (p500, user alice) is gone;"), std::string::npos)
      << f->summary;
  // Reaped before the daemon read it: when, not how.
  o.rank_exits = {{500, 1500, 504, 1504, 3u, ticks_ago(std::chrono::seconds(30)), std::nullopt}};
  auto reaped = make_snapshot({proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0),
                               job_rank(502, 500, 1, 4, 1), job_rank(503, 500, 2, 4, 2)},
                              gpus_of_ranks({501, 502, 503}), o);
  const auto reaped_fs = diagnose_job(reaped);
  const auto* g = stalled_finding(reaped_fs);
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->summary.find("rank 3 of job PID 500 (p500, user alice) exited 30 s ago;"),
            std::string::npos)
      << g->summary;
  EXPECT_NE(evidence_of(*g).find("its launcher reaped it before the daemon read how it ended"),
            std::string::npos);
}

TEST(DoctorStalledJob, TheOomKillersRecordNamesWhatKilledTheRank) {
  auto s = job_with_exit(std::chrono::minutes(4), 9);
  core::KernelLog log;
  log.read = true;
  core::OomKill k;
  k.pid = 504;
  k.name = "python3";
  k.uid = 1000;
  k.since_boot_usec = 9'759'900'000;  // 0.1 s before the daemon saw rank 3 end
  k.text = "Out of memory: Killed process 504 (python3) total-vm:1kB, UID:1000";
  // The same PID killed before rank 3 started: another process's record.
  core::OomKill earlier = k;
  earlier.since_boot_usec = 1'000'000;
  log.oom_kills = {earlier, k};
  DoctorInput in{s, s, {}, std::nullopt, {}};
  in.kernel = &log;
  const auto fs = diagnose(in);
  const auto* f = stalled_finding(fs);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->summary,
            "rank 3 of job PID 500 (p500, user alice) was killed by the OOM killer 4 min ago; "
            "ranks 0\u20132 still hold 96 GiB on GPUs 0\u20132 and are probably waiting for it");
  EXPECT_NE(evidence_of(*f).find("the kernel log: the OOM killer killed rank 3 (PID 504): \"Out "
                                 "of memory: Killed process 504 (python3) total-vm:1kB, "
                                 "UID:1000\""),
            std::string::npos)
      << evidence_of(*f);
  // Only the earlier record: it names another process, and nothing is said of it.
  log.oom_kills = {earlier};
  const auto without = diagnose(in);
  const auto* g = stalled_finding(without);
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->summary.find("exited with SIGKILL 4 min ago"), std::string::npos) << g->summary;
  EXPECT_EQ(evidence_of(*g).find("OOM"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::doctor
