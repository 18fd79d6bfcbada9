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
  // The launcher's exited child, which the daemon watched as rank 3: a rank ended, on the
  // kernel's word.
  SnapshotOptions o;
  o.rank_exits = {{500, 1500, 507, 1507, 3u, 1600, 9}};
  auto s = make_snapshot({proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0),
                          job_rank(502, 500, 1, 4, 1), job_rank(503, 500, 2, 4, 2), other_user,
                          older, other_group, owned(proc(507, 500, 500, 'Z'), 1000, "alice")},
                         gpus_of_ranks({501, 502, 503}), o);
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

// Doctor's first sample shows rank 3 live; its second, 5 s later, a zombie its launcher has not
// reaped: the rank ended, on the kernel's word (its PID and start time).
TEST(DoctorStalledJob, ARankGoneWhileTheOthersHoldTheirGpus) {
  std::vector<core::HostProcess> ps{
      proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0), job_rank(502, 500, 1, 4, 1),
      job_rank(503, 500, 2, 4, 2),
      // another user's healthy job and a lone holder stay out of it
      owned(proc(700, 1, 700), 1001, "bob"), owned(job_rank(701, 700, 0, 2, 3), 1001, "bob"),
      owned(job_rank(702, 700, 1, 2, 3), 1001, "bob"), holder(800, 1, 800, 3)};
  auto live = ps;
  live.push_back(job_rank(504, 500, 3, 4, 3));
  ps.push_back(owned(proc(504, 500, 500, 'Z'), 1000, "alice"));
  auto first = make_snapshot(live, gpus_of_ranks({501, 502, 503, 504}));
  SnapshotOptions later;
  later.at += std::chrono::seconds(5);
  auto s = make_snapshot(ps, gpus_of_ranks({501, 502, 503}), later);
  auto fs = diagnose({first, s, {}, std::nullopt, {}});
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
  EXPECT_NE(evidence.find("doctor saw rank 3 (PID 504) end between its two samples, 5.0 s apart: "
                          "a live rank in the first, in the second a zombie its launcher has not "
                          "reaped"),
            std::string::npos)
      << evidence;
  EXPECT_NE(evidence.find("has not reaped its exited rank 504"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("waiting in futex_wait_queue"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("LOCAL_WORLD_SIZE label says 4"), std::string::npos) << evidence;
  // Only that job: bob's job and the lone holder are in no stalled finding, nor in --fix.
  std::vector<pid_t> fixed;
  for (const auto& x : fixable(fs)) {
    EXPECT_TRUE(x.stalled_job);
    fixed.push_back(x.pid);
  }
  EXPECT_EQ(fixed, (std::vector<pid_t>{500, 501, 502, 503}));
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
  // Rank 1 ended between the samples and its launcher reaped it: it may be starting it again.
  auto reaped = make_snapshot({proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0, 2)},
                              gpus_of_ranks({501}));
  EXPECT_EQ(stalled_finding(diagnose({last, reaped, {}, std::nullopt, {}})), nullptr);
  // Its launcher has not reaped it: it ended, and nothing starts it again.
  auto gone_now = make_snapshot({proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0, 2),
                                 owned(proc(502, 500, 500, 'Z'), 1000, "alice")},
                                gpus_of_ranks({501}));
  EXPECT_NE(stalled_finding(diagnose({last, gone_now, {}, std::nullopt, {}})), nullptr);
}

TEST(DoctorStalledJob, DoctorSettlesOnAJobWithARankMissingAndSeesTheOthersWait) {
  std::vector<core::HostProcess> ps{proc(1, 0, 1),
                                    job_launcher(500),
                                    job_rank(501, 500, 0),
                                    job_rank(502, 500, 1, 4, 1),
                                    job_rank(503, 500, 2, 4, 2),
                                    owned(proc(504, 500, 500, 'Z'), 1000, "alice")};
  SnapshotOptions seen;  // the daemon watched rank 3 end
  seen.rank_exits = {{500, 1500, 504, 1504, 3u, 1600, 9}};
  auto first = make_snapshot(ps, gpus_of_ranks({501, 502, 503}), seen);
  EXPECT_TRUE(needs_settle(first, std::nullopt));
  // 5 s later: ranks 0 and 1 used no CPU (they wait), rank 2 used 2 s of it.
  ps[4].stat.cpu_ticks += 200;
  SnapshotOptions later = seen;
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
  EXPECT_TRUE(jobs[0].ended.empty());
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
  // no rank of this job is known to have ended, so nothing is stalled, with the launcher's
  // exited child 504 too (the record is not of it): that is a doubt about the launcher.
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
  EXPECT_EQ(stalled_finding(fs), nullptr);
  EXPECT_TRUE(fixable(fs).empty());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, FindingCode::UnreapedZombies);
  EXPECT_EQ(fs[0].pids, std::vector<pid_t>{500});
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

// A healthy job whose rank 3 has yet to start (it waits for its data, or runs under another
// launcher), and whose launcher has children it has not reaped that were never seen as ranks:
// a helper it ran (505), a setuid program's child of another user (506), and 507, a process
// under rank 3's old number that started after rank 3's view of it. A zombie keeps nothing that
// says it was a rank: nothing is stalled, nothing marked or planned; the launcher's own user's
// unreaped children, in both samples, are a doubt about the launcher, which nothing acts on.
TEST(DoctorStalledJob, ALaunchersUnreapedHelperNeverEndsARank) {
  std::vector<core::HostProcess> ps{proc(1, 0, 1),
                                    job_launcher(500),
                                    job_rank(501, 500, 0),
                                    job_rank(502, 500, 1, 4, 1),
                                    job_rank(503, 500, 2, 4, 2),
                                    owned(proc(505, 500, 500, 'Z'), 1000, "alice"),
                                    owned(proc(506, 500, 500, 'Z'), 0, "root")};
  auto before = ps;
  before.push_back(job_rank(507, 500, 3, 4, 3));  // rank 3 as the earlier view saw it
  auto reused = owned(proc(507, 500, 500, 'Z'), 1000, "alice");
  reused.stat.start_ticks = 2000;
  ps.push_back(reused);
  const auto first = make_snapshot(ps, gpus_of_ranks({501, 502, 503}));
  const auto earlier = make_snapshot(before, gpus_of_ranks({501, 502, 503, 507}));
  for (const core::Snapshot* was : {&first, &earlier}) {
    const auto last = make_snapshot(ps, gpus_of_ranks({501, 502, 503}));
    auto jobs = core::distributed_jobs(last.proc, &was->proc);
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_EQ(jobs[0].missing, std::vector<unsigned>{3});
    EXPECT_TRUE(jobs[0].ended.empty());
    EXPECT_TRUE(jobs[0].exited.empty());
    EXPECT_EQ(jobs[0].unreaped, (std::vector<pid_t>{505, 507}));
    EXPECT_FALSE(jobs[0].stalled());
    for (const auto& r : last.rows) {
      EXPECT_FALSE(r.has(core::Anomaly::StalledJob)) << r.pid;
    }
  }
  const auto last = make_snapshot(ps, gpus_of_ranks({501, 502, 503}));
  // One finding: the doubt about the launcher, for a person to judge; --fix has nothing to do.
  const auto fs = diagnose({first, last, {}, std::nullopt, {}});
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, FindingCode::UnreapedZombies);
  EXPECT_EQ(fs[0].severity, Severity::Warning);
  EXPECT_EQ(fs[0].pids, std::vector<pid_t>{500});
  EXPECT_EQ(fs[0].gpus, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(fs[0].summary,
            "PID 500 (p500), the launcher of a distributed job (p500, user alice), does not reap "
            "its exited children 505 507 while rank 3 of the job is missing; nothing shows "
            "whether a child was that rank");
  EXPECT_NE(evidence_of(fs[0]).find("nothing the kernel keeps of them says one was a rank"),
            std::string::npos)
      << evidence_of(fs[0]);
  EXPECT_TRUE(fixable(fs).empty());
  // A zombie only in the later sample may be one the launcher is about to reap: not even that.
  auto without = ps;
  std::erase_if(without, [](const core::HostProcess& p) { return p.stat.is_zombie(); });
  const auto reaping = make_snapshot(without, gpus_of_ranks({501, 502, 503}));
  EXPECT_TRUE(diagnose({reaping, last, {}, std::nullopt, {}}).empty());
}

// nvidia-smi, run by the launcher, opens the GPU's files: while it runs it is a child of the
// launcher that holds a GPU file, and the daemon watches it as an unlabelled rank. Its end, seen
// by the daemon or between doctor's samples, is no numbered rank's: a job whose rank 3 has yet to
// start is not stalled.
TEST(DoctorStalledJob, AHelperThatOpenedTheGpuEndsNoNumberedRank) {
  std::vector<core::HostProcess> ps{proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0),
                                    job_rank(502, 500, 1, 4, 1), job_rank(503, 500, 2, 4, 2)};
  auto running = ps;
  auto smi = job_rank(508, 500, std::nullopt, 4, 0);
  smi.stat.comm = "nvidia-smi";
  running.push_back(smi);
  ps.push_back(owned(proc(508, 500, 500, 'Z'), 1000, "alice"));
  const auto first = make_snapshot(running, gpus_of_ranks({501, 502, 503}));
  SnapshotOptions o;
  o.rank_exits = {{500, 1500, 508, 1508, std::nullopt, 1600, 0}};
  const auto last = make_snapshot(ps, gpus_of_ranks({501, 502, 503}), o);
  auto jobs = core::distributed_jobs(last.proc, &first.proc);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].missing, std::vector<unsigned>{3});
  EXPECT_EQ(jobs[0].exited, std::vector<pid_t>{508});  // a child the daemon watched
  EXPECT_TRUE(jobs[0].ended.empty());
  EXPECT_FALSE(jobs[0].stalled());
  for (const auto& r : last.rows) {
    EXPECT_FALSE(r.has(core::Anomaly::StalledJob)) << r.pid;
  }
  for (const core::Snapshot* was : {&first, &last}) {
    const auto fs = diagnose({*was, last, {}, std::nullopt, {}});
    EXPECT_EQ(stalled_finding(fs), nullptr);
    EXPECT_TRUE(fixable(fs).empty());
  }
}

// Rank 0 of alice's job has not opened its GPU yet; its DataLoader workers, forked from it with
// its environment, opened theirs themselves: under rank 0, as under a launcher, they look like
// ranks, all labelled LOCAL_RANK 0 of 4. One worker has exited and rank 0 has not reaped it yet.
// Copies of one label number no ranks: rank 0 is no stalled launcher, and nothing is planned.
TEST(DistributedJobs, WorkersThatCopiedTheirTrainersLabelsNumberNoRanks) {
  std::vector<core::HostProcess> ps{proc(1, 0, 1), job_launcher(500)};
  auto trainer = owned(proc(501, 500, 500), 1000, "alice");
  core::RankLabels zero;
  zero.local_rank = 0;
  zero.local_world_size = 4;
  trainer.details->rank_labels = zero;
  ps.push_back(trainer);
  ps.push_back(job_rank(502, 500, 1, 4, 1));
  for (pid_t w : {601, 602, 603}) {
    auto worker = owned(holder(w, 501, 500, 0), 1000, "alice");  // the job's process group
    worker.details->rank_labels = zero;
    ps.push_back(worker);
  }
  ps.push_back(owned(proc(604, 501, 500, 'Z'), 1000, "alice"));
  SnapshotOptions o;  // the daemon watched worker 604, labelled as rank 0, end
  o.rank_exits = {{501, 1501, 604, 1604, 0u, 1700, 0}};
  auto s = make_snapshot(ps, gpus_of_ranks({601, 502}), o);
  const auto jobs = core::distributed_jobs(s.proc, &s.proc);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].launcher, 500);  // rank 1 holds its GPU; ranks 2 and 3 have yet to start
  EXPECT_EQ(jobs[0].missing, (std::vector<unsigned>{2, 3}));
  EXPECT_EQ(jobs[1].launcher, 501);
  EXPECT_FALSE(jobs[1].local_world_size);
  EXPECT_TRUE(jobs[1].missing.empty());
  for (const auto& job : jobs) {
    EXPECT_FALSE(job.stalled()) << job.launcher;
    EXPECT_TRUE(job.ended.empty()) << job.launcher;
  }
  const auto fs = diagnose_job(s);
  for (const auto& f : fs) {
    EXPECT_NE(f.code, FindingCode::StalledJob) << f.summary;
    EXPECT_NE(f.code, FindingCode::UnreapedZombies) << f.summary;
  }
  EXPECT_TRUE(fixable(fs).empty());
  for (const auto& r : s.rows) {
    EXPECT_FALSE(r.has(core::Anomaly::StalledJob)) << r.pid;
  }
}

}  // namespace
}  // namespace gpureap::doctor
