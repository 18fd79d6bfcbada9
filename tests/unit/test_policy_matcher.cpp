#include <gtest/gtest.h>

#include "policy/exemption.h"
#include "policy/matcher.h"
#include "snapshot_builders.h"

namespace gpureap::policy {
namespace {

using namespace std::chrono_literals;
using testing::GiB;
using testing::gpu;
using testing::holder;
using testing::listed;
using testing::make_snapshot;

const Evaluation& of(const std::vector<Evaluation>& evals, pid_t pid) {
  for (const auto& e : evals)
    if (e.pid == pid) return e;
  ADD_FAILURE() << "no evaluation of " << pid;
  static Evaluation none;
  return none;
}

core::Snapshot two_users() {
  auto alice = holder(100, 1, 100);
  alice.details->user = "alice";
  alice.details->uid = 1000;
  alice.stat.comm = "python3";
  alice.details->cmdline = {"/usr/bin/python3", "train.py"};
  auto bob = holder(200, 1, 200, 1);
  bob.details->user = "bob";
  bob.details->uid = 1001;
  bob.details->container = core::ContainerInfo{"docker", std::string(64, 'a'), std::nullopt};
  bob.details->container->verified = true;
  auto g0 = gpu(0, 0, 3 * GiB, {listed(100, 3 * GiB)});
  auto g1 = gpu(1, 1, GiB / 2, {listed(200, GiB / 2)});
  g0.processes[0].sm_utilization_percent = 2;
  return make_snapshot({alice, bob}, {g0, g1});
}

MatchContext context(const core::Snapshot& s) {
  return {s, s.timestamp, nullptr, nullptr};
}

TEST(PolicyMatcher, EveryConditionMustHoldAndEachIsExplained) {
  auto s = two_users();
  Policy p;
  p.user = "alice";
  p.command = "python*";
  p.min_memory = GiB;
  auto evals = evaluate(p, context(s));
  ASSERT_EQ(evals.size(), 2u);
  const auto& a = of(evals, 100);
  EXPECT_TRUE(a.matched());
  EXPECT_EQ(a.memory_bytes, 3 * GiB);
  ASSERT_EQ(a.reasons().size(), 3u);
  EXPECT_EQ(a.reasons()[0], "user alice");
  EXPECT_NE(a.reasons()[2].find("3.0 GiB"), std::string::npos) << a.reasons()[2];
  const auto& b = of(evals, 200);
  EXPECT_FALSE(b.matched());
  ASSERT_NE(b.failed(), nullptr);
  EXPECT_EQ(b.failed()->detail, "user bob (wanted alice)");
}

// A uid without a login name is shown by its number; a policy naming a user by that number
// (a name no account has) does not match it, and `uid` does.
TEST(PolicyMatcher, AUidWithoutALoginNameMatchesNoUserByItsNumber) {
  auto s = two_users();
  for (auto& row : s.rows)
    if (row.pid == 200) row.process->details->user = "1001";
  Policy by_name;
  by_name.user = "1001";
  auto evals = evaluate(by_name, context(s));
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_FALSE(of(evals, 100).matched());
  EXPECT_FALSE(of(evals, 200).matched());
  ASSERT_NE(of(evals, 200).failed(), nullptr);
  EXPECT_EQ(of(evals, 200).failed()->detail, "uid 1001 has no login name (wanted 1001)");
  Policy by_uid;
  by_uid.uid = 1001;
  evals = evaluate(by_uid, context(s));
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_FALSE(of(evals, 100).matched());
  EXPECT_TRUE(of(evals, 200).matched());
}

TEST(PolicyMatcher, MinMemoryAndGpuCountOnlyThatGpu) {
  auto s = two_users();
  Policy p;
  p.gpu = 1;
  p.min_memory = GiB / 4;
  auto evals = evaluate(p, context(s));
  EXPECT_FALSE(of(evals, 100).matched());
  EXPECT_TRUE(of(evals, 200).matched());
  EXPECT_EQ(of(evals, 200).gpus, std::vector<unsigned>{1});
  p.min_memory = GiB;
  EXPECT_FALSE(of(evaluate(p, context(s)), 200).matched());
}

TEST(PolicyMatcher, AGpuIsWhereAProcessesMemoryIsNotEveryFileItHolds) {
  // Alice's trainer 100 runs on GPU 0 and opened GPU 1's file too, as CUDA does; its worker 101
  // inherited both. A policy for GPU 1 matches neither; one for GPU 0 matches both.
  auto trainer = holder(100, 1, 100);
  trainer.devices = {testing::nvidia_hold(0, {5}, "100:5"), testing::nvidia_hold(1, {6}, "100:6")};
  auto worker = holder(101, 100, 100);
  worker.devices = trainer.devices;
  auto s = make_snapshot({trainer, worker},
                         {gpu(0, 0, 3 * GiB, {listed(100, 3 * GiB)}), gpu(1, 1, 0, {})});
  Policy p;
  p.gpu = 1;
  const auto on_1 = evaluate(p, context(s));
  for (pid_t pid : {100, 101}) EXPECT_FALSE(of(on_1, pid).matched()) << pid;
  p.gpu = 0;
  const auto on_0 = evaluate(p, context(s));
  for (pid_t pid : {100, 101}) {
    const auto& e = of(on_0, pid);
    EXPECT_TRUE(e.matched()) << pid;
    EXPECT_EQ(e.gpus, std::vector<unsigned>{0});
  }
}

TEST(PolicyMatcher, UnknownMemoryNeverMatchesAMinimum) {
  auto alice = holder(100, 1, 100);
  auto s = make_snapshot({alice}, {gpu(0, 0, GiB, {listed(100, std::nullopt)})});
  Policy p;
  p.min_memory = 1;
  auto evals = evaluate(p, context(s));
  const auto& e = of(evals, 100);
  EXPECT_FALSE(e.matched());
  EXPECT_NE(e.failed()->detail.find("unknown"), std::string::npos);
}

TEST(PolicyMatcher, AKeeperOfAGonePidCountsTheMemoryItKeepsAlive) {
  // 501 is gone; its forked worker 502 (same process group) still holds GPU 0.
  auto worker = holder(502, 1, 501);
  auto s = make_snapshot({worker}, {gpu(0, 0, 6 * GiB, {listed(501, 6 * GiB)})});
  Policy p;
  p.anomalies = {core::Anomaly::InheritedHolder};
  p.min_memory = GiB;
  auto evals = evaluate(p, context(s));
  const auto& e = of(evals, 502);
  EXPECT_TRUE(e.matched()) << (e.failed() ? e.failed()->detail : "");
  EXPECT_EQ(e.memory_bytes, 6 * GiB);
  EXPECT_EQ(e.memory_by_gpu.at(0), 6 * GiB);
}

TEST(PolicyMatcher, AGonePidsDriverNameMatchesNoCommandItsKeeperMatchesByItsOwn) {
  // 501 is gone; the driver names it "jupyter-lab" (whoever has the number now); its worker 502
  // keeps its context and calls itself "python3".
  auto worker = holder(502, 1, 501);
  worker.stat.comm = "python3";
  auto gone = listed(501, 6 * GiB);
  gone.name = "jupyter-lab";
  auto s = make_snapshot({worker}, {gpu(0, 0, 6 * GiB, {gone})});
  Policy p;
  p.command = "jupyter*";
  auto evals = evaluate(p, context(s));
  const auto& g = of(evals, 501);
  EXPECT_FALSE(g.matched());
  ASSERT_NE(g.failed(), nullptr);
  EXPECT_NE(g.failed()->detail.find("command unknown"), std::string::npos) << g.failed()->detail;
  EXPECT_FALSE(of(evals, 502).matched());
  p.command = "python*";
  EXPECT_TRUE(of(evaluate(p, context(s)), 502).matched());
}

TEST(PolicyMatcher, CommandGlobSeesCommArgv0AndTheWholeCommandLine) {
  auto s = two_users();
  for (const char* pattern : {"python3", "/usr/bin/python*", "*train.py"}) {
    Policy p;
    p.command = pattern;
    EXPECT_TRUE(of(evaluate(p, context(s)), 100).matched()) << pattern;
  }
  Policy p;
  p.command = "java";
  EXPECT_FALSE(of(evaluate(p, context(s)), 100).matched());
}

TEST(PolicyMatcher, ContainerMatchesItsShortIdAndARowOutsideContainersNever) {
  auto s = two_users();
  Policy p;
  p.container = std::string(12, 'a');
  EXPECT_TRUE(of(evaluate(p, context(s)), 200).matched());
  EXPECT_FALSE(of(evaluate(p, context(s)), 100).matched());
  p.container = "*";
  EXPECT_FALSE(of(evaluate(p, context(s)), 100).matched());
}

TEST(PolicyMatcher, ContainerMatchesTheNamesItsRuntimeGives) {
  auto s = two_users();
  auto& c = *s.proc.processes.edit()[1].details->container;
  ASSERT_EQ(s.proc.processes[1].stat.pid, 200);
  c.name = "train";
  c.pod_name = "bert-0";
  c.pod_namespace = "research";
  s = make_snapshot(s.proc.processes, s.drivers.gpus);
  for (const char* pattern : {"train", "bert-*", "research/*"}) {
    Policy p;
    p.container = pattern;
    EXPECT_TRUE(of(evaluate(p, context(s)), 200).matched()) << pattern;
    EXPECT_FALSE(of(evaluate(p, context(s)), 100).matched()) << pattern;
  }
  Policy p;
  p.container = "other/*";
  EXPECT_FALSE(of(evaluate(p, context(s)), 200).matched());
}

TEST(PolicyMatcher, AnUnverifiedContainerClaimMatchesNoContainerCondition) {
  // alice's cgroup claims bob's container, names and all; the collector could not verify it.
  auto s = two_users();
  auto& processes = s.proc.processes.edit();
  auto& alice = processes[0];
  ASSERT_EQ(alice.stat.pid, 100);
  processes[1].details->container->name = "train";
  alice.details->container = processes[1].details->container;
  alice.details->container->verified = false;
  alice.details->container->verification = "cgroup /x lies in user@1000.service";
  s = make_snapshot(s.proc.processes, s.drivers.gpus);
  for (const char* pattern : {"*", "docker", "aaaaaaaaaaaa", "train"}) {
    Policy p;
    p.container = pattern;
    auto e = of(evaluate(p, context(s)), 100);
    EXPECT_FALSE(e.matched()) << pattern;
    ASSERT_NE(e.failed(), nullptr) << pattern;
    EXPECT_EQ(e.failed()->detail,
              "unverified docker:aaaaaaaaaaaa: cgroup /x lies in user@1000.service")
        << pattern;
    EXPECT_TRUE(of(evaluate(p, context(s)), 200).matched()) << pattern << ": bob's own";
  }
}

TEST(PolicyMatcher, AnomaliesMatchAnyOfTheNamedOnes) {
  // The leader of 300's group and session (250) is gone, and 300 keeps its context: an orphan.
  auto orphan = holder(300, 1, 250);
  orphan.stat.sid = 250;
  auto s = make_snapshot({orphan}, {gpu(0, 0, GiB, {listed(250, GiB)})});
  Policy p;
  p.anomalies = {core::Anomaly::Stopped, core::Anomaly::Orphan};
  auto evals = evaluate(p, context(s));
  const auto& e = of(evals, 300);
  EXPECT_TRUE(e.matched());
  EXPECT_EQ(e.reasons(), std::vector<std::string>{"orphan"});
  p.anomalies = {core::Anomaly::Stopped};
  EXPECT_FALSE(of(evaluate(p, context(s)), 300).matched());
}

// A rank of a distributed job: its own GPU file, its launcher's group, its labels.
core::HostProcess job_rank(pid_t pid, pid_t launcher, unsigned n, uid_t uid,
                           const std::string& user, std::optional<unsigned> restarts = {}) {
  auto p = testing::owned(holder(pid, launcher, launcher, n), uid, user);
  core::RankLabels l;
  l.local_rank = n;
  l.local_world_size = 4;
  if (restarts) {
    l.restart_count = 0;
    l.max_restarts = *restarts;
  }
  p.details->rank_labels = l;
  return p;
}

TEST(PolicyMatcher, AStalledJobIsMatchedWholeAndNoOtherJob) {
  using testing::owned;
  using testing::proc;
  std::vector<core::HostProcess> ps{proc(1, 0, 1)};
  // alice's job 500 lost rank 3 (its zombie); rank 0 has a DataLoader worker (601).
  ps.push_back(owned(proc(500, 1, 500), 1000, "alice"));
  for (unsigned n = 0; n < 3; ++n) ps.push_back(job_rank(501 + n, 500, n, 1000, "alice"));
  ps.push_back(owned(proc(504, 500, 500, 'Z'), 1000, "alice"));
  ps.push_back(owned(holder(601, 501, 500), 1000, "alice"));
  // alice's healthy job 700, bob's job 800 (it lost rank 3 too: another user's, not named by
  // the policy's user), and a torchrun job 900 whose agent restarts its ranks.
  ps.push_back(owned(proc(700, 1, 700), 1000, "alice"));
  for (unsigned n = 0; n < 4; ++n) ps.push_back(job_rank(701 + n, 700, n, 1000, "alice"));
  ps.push_back(owned(proc(800, 1, 800), 1001, "bob"));
  for (unsigned n = 0; n < 3; ++n) ps.push_back(job_rank(801 + n, 800, n, 1001, "bob"));
  ps.push_back(owned(proc(804, 800, 800, 'Z'), 1001, "bob"));
  ps.push_back(owned(proc(900, 1, 900), 1000, "alice"));
  for (unsigned n = 0; n < 3; ++n) ps.push_back(job_rank(901 + n, 900, n, 1000, "alice", 3));
  // Each rank listed on the GPU whose file it opened (rank N: GPU N).
  // The daemon watched both rank 3s end.
  testing::SnapshotOptions o;
  o.rank_exits = {{500, 1500, 504, 1504, 3u, 1600, 9}, {800, 1800, 804, 1804, 3u, 1900, 9}};
  auto s = make_snapshot(
      ps,
      {gpu(0, 0, 4 * GiB, {listed(501, GiB), listed(701, GiB), listed(801, GiB), listed(901, GiB)}),
       gpu(1, 1, GiB, {listed(502, GiB)}), gpu(2, 2, GiB, {listed(503, GiB)})},
      o);

  Policy p;
  p.user = "alice";
  p.anomalies = {core::Anomaly::StalledJob};
  std::vector<pid_t> matched;
  for (const auto& e : evaluate(p, context(s)))
    if (e.matched()) matched.push_back(e.pid);
  EXPECT_EQ(matched, (std::vector<pid_t>{501, 502, 503, 601}));
  EXPECT_EQ(of(evaluate(p, context(s)), 501).reasons(),
            (std::vector<std::string>{"user alice", "stalled-job"}));
  EXPECT_EQ(of(evaluate(p, context(s)), 701).failed()->detail, "no anomaly");
  // Without the user condition bob's stalled job is matched as well, and still no other.
  p.user.reset();
  matched.clear();
  for (const auto& e : evaluate(p, context(s)))
    if (e.matched()) matched.push_back(e.pid);
  EXPECT_EQ(matched, (std::vector<pid_t>{501, 502, 503, 601, 801, 802, 803}));
}

TEST(PolicyMatcher, IdleComesFromTheHistoryAndMustHaveLastedLongEnough) {
  auto s = two_users();
  Policy p;
  p.idle = 10min;
  p.idle_below = 5;
  MatchContext ctx = context(s);
  std::chrono::minutes idle_for{12};
  ctx.idle_since = [&](const core::ProcessRow& row, unsigned,
                       unsigned below) -> std::optional<std::chrono::system_clock::time_point> {
    EXPECT_EQ(below, 5u);
    if (row.pid != 100) return std::nullopt;
    return s.timestamp - idle_for;
  };
  EXPECT_TRUE(of(evaluate(p, ctx), 100).matched());
  EXPECT_FALSE(of(evaluate(p, ctx), 200).matched());
  idle_for = std::chrono::minutes(3);
  auto evals = evaluate(p, ctx);
  const auto& e = of(evals, 100);
  EXPECT_FALSE(e.matched());
  EXPECT_EQ(e.failed()->detail, "idle (SM < 5%) for 3m00s of 10m00s");
}

TEST(PolicyMatcher, WithoutHistoryIdleIsOnlyPossibleWhenBelowNow) {
  auto s = two_users();
  Policy p;
  p.idle = 10min;
  auto evals = evaluate(p, context(s));
  const auto& a = of(evals, 100);  // SM 2% now
  EXPECT_FALSE(a.matched());
  EXPECT_TRUE(a.possible());
  const auto& b = of(evals, 200);  // no utilisation sample: never proven idle
  EXPECT_FALSE(b.possible());
}

TEST(PolicyMatcher, RuntimeNeedsTheProcessToBeOlder) {
  auto s = two_users();
  s.proc.boot_time =
      std::chrono::duration_cast<std::chrono::seconds>(s.timestamp.time_since_epoch()).count() -
      3600;
  s.proc.ticks_per_second = 100;
  Policy p;
  p.runtime = 30min;  // both started ~11 s after boot: running for ~59 min
  EXPECT_TRUE(of(evaluate(p, context(s)), 100).matched());
  p.runtime = 2h;
  EXPECT_FALSE(of(evaluate(p, context(s)), 100).matched());
}

TEST(PolicyMatcher, ProtectedProcessesAndGpureapItselfAreExempt) {
  auto xorg = holder(400, 1, 400);
  xorg.stat.comm = "Xorg";
  xorg.details->cmdline = {"/usr/lib/xorg/Xorg", ":0"};
  auto self = holder(::getpid(), 1, ::getpid());
  auto s = make_snapshot({xorg, self}, {gpu(0, 0, GiB, {listed(400, GiB)})});
  Policy p;
  p.min_memory = 0;
  MatchContext ctx{s, s.timestamp, nullptr, exemption_for(s)};
  auto evals = evaluate(p, ctx);
  const auto& x = of(evals, 400);
  EXPECT_FALSE(x.matched());
  ASSERT_TRUE(x.exempt.has_value());
  EXPECT_NE(x.exempt->find("protected"), std::string::npos);
  EXPECT_EQ(of(evals, ::getpid()).exempt, "gpureap itself");
}

}  // namespace
}  // namespace gpureap::policy
