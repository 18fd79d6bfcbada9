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
  auto s = make_snapshot(
      {proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0), job_rank(502, 500, 1, 4, 1),
       job_rank(503, 500, 2, 4, 2), other_user, older, other_group},
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
  auto gone_now = make_snapshot({proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0, 2)},
                                gpus_of_ranks({501}));
  EXPECT_EQ(stalled_finding(diagnose({last, gone_now, {}, std::nullopt, {}})), nullptr);
  EXPECT_NE(stalled_finding(diagnose({gone_now, gone_now, {}, std::nullopt, {}})), nullptr);
}

TEST(DoctorStalledJob, DoctorSettlesOnAJobWithARankMissingAndSeesTheOthersWait) {
  std::vector<core::HostProcess> ps{proc(1, 0, 1), job_launcher(500), job_rank(501, 500, 0),
                                    job_rank(502, 500, 1, 4, 1), job_rank(503, 500, 2, 4, 2)};
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

}  // namespace
}  // namespace gpureap::doctor
