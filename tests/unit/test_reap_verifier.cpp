// Verification over a scripted sequence of snapshots: a kill is finished when the memory is
// back, not when the process is gone.
#include <gtest/gtest.h>

#include <deque>

#include "reap/outcome.h"
#include "reap/verifier.h"
#include "snapshot_builders.h"

namespace gpureap::reap {
namespace {

using namespace gpureap::testing;
using std::chrono::milliseconds;

// Hands out the scripted snapshots in order, then repeats the last one: every look of the
// verifier is a full snapshot, and /proc/PID/stat answers from the latest one.
struct Script {
  std::deque<core::Snapshot> snaps;
  int served = 0;
  std::shared_ptr<core::Snapshot> last = std::make_shared<core::Snapshot>();
  ReleaseSource source() {
    ReleaseSource r;
    r.driver = [this] {
      ++served;
      *last = snaps.front();
      if (snaps.size() > 1) snaps.pop_front();
      return *last;
    };
    r.full = [this] { return *last; };
    r.stat = [this](pid_t pid) -> std::optional<core::ProcessStat> {
      const core::HostProcess* p = last->find(pid);
      return p ? std::optional(p->stat) : std::nullopt;
    };
    return r;
  }
};

const VerifyOptions kFast{milliseconds(2000), milliseconds(1)};

Target listed_target(pid_t pid, unsigned gpu_index, uint64_t bytes) {
  Target t;
  t.pid = pid;
  t.start_ticks = 1000 + static_cast<uint64_t>(pid);
  t.gpus.push_back({gpu_index, bytes});
  t.reasons.push_back({ReasonKind::Named});
  return t;
}

Execution exited(pid_t pid) {
  Execution e;
  e.pid = pid;
  e.status = ExecStatus::Exited;
  e.signals = {SIGTERM};
  e.exited_after = SIGTERM;
  e.exited_at = std::chrono::system_clock::now();
  e.exited_steady = std::chrono::steady_clock::now();
  return e;
}

// Trainer 400 holds 16 GiB on GPU 0; the driver holds 1 GiB for nobody.
Plan trainer_plan() {
  Plan p;
  p.backend_available = true;
  p.targets.push_back(listed_target(400, 0, 16 * GiB));
  p.gpus.push_back({0, 17 * GiB, GiB});
  return p;
}

core::Snapshot with_trainer() {
  return make_snapshot({proc(1, 0, 1), holder(400, 1, 400)},
                       {gpu(0, 0, 17 * GiB, {listed(400, 16 * GiB)})});
}
core::Snapshot listing_gone_memory_held() {
  return make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 17 * GiB, {})});
}
core::Snapshot all_back() {
  return make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, GiB, {})});
}

TEST(ReapVerifier, WaitsUntilTheListingGoesAndTheMemoryDrops) {
  Plan plan = trainer_plan();
  std::vector<Execution> execs{exited(400)};
  Script script{{with_trainer(), with_trainer(), listing_gone_memory_held(), all_back()}};
  auto v = verify(plan, execs, script.source(), kFast);
  EXPECT_EQ(v.polls, 4);
  EXPECT_FALSE(v.timed_out);
  ASSERT_EQ(v.listings.size(), 1u);
  EXPECT_TRUE(v.listings[0].released);
  auto r = compose(plan, execs, v);
  ASSERT_EQ(r.outcomes.size(), 1u);
  EXPECT_EQ(r.outcomes[0].kind, OutcomeKind::Released);
  EXPECT_EQ(r.outcomes[0].released_bytes, 16 * GiB);
  EXPECT_TRUE(r.outcomes[0].release_ms.has_value());
  ASSERT_EQ(r.freed.size(), 1u);
  EXPECT_EQ(r.freed[0].bytes, 16 * GiB);
  EXPECT_EQ(r.freed[0].used_after, GiB);
  EXPECT_EQ(r.exit_code, kExitReleased);
}

TEST(ReapVerifier, MemoryThatStaysWithTheDriverIsStillHeld) {
  Plan plan = trainer_plan();
  std::vector<Execution> execs{exited(400)};
  Script script{{listing_gone_memory_held()}};
  auto v = verify(plan, execs, script.source(), {milliseconds(30), milliseconds(5)});
  EXPECT_TRUE(v.timed_out);
  EXPECT_GE(v.polls, 2);
  EXPECT_TRUE(v.listings[0].left_list);
  EXPECT_FALSE(v.listings[0].released);
  auto r = compose(plan, execs, v);
  EXPECT_EQ(r.outcomes[0].kind, OutcomeKind::StillHeld);
  EXPECT_NE(r.outcomes[0].why.find("did not drop"), std::string::npos) << r.outcomes[0].why;
  EXPECT_EQ(r.exit_code, kExitHeld);
}

TEST(ReapVerifier, LeakedContextIsStillHeldByNobody) {
  Plan plan = trainer_plan();
  std::vector<Execution> execs{exited(400)};
  Script script{{make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 17 * GiB, {listed(400, 16 * GiB)})})}};
  auto v = verify(plan, execs, script.source(), {milliseconds(20), milliseconds(5)});
  auto r = compose(plan, execs, v);
  EXPECT_EQ(r.outcomes[0].kind, OutcomeKind::StillHeld);
  EXPECT_TRUE(r.outcomes[0].held_by.empty());
  EXPECT_NE(r.outcomes[0].why.find("leaked"), std::string::npos) << r.outcomes[0].why;
  EXPECT_EQ(r.freed[0].bytes, 0u);
}

TEST(ReapVerifier, ListedPidKeptAliveByItsChildrenNamesThem) {
  Plan plan = trainer_plan();
  std::vector<Execution> execs{exited(400)};
  // 400 died, but its worker 401 (group 400) inherited the device file.
  Script script{{make_snapshot({proc(1, 0, 1), holder(401, 1, 400)},
                               {gpu(0, 0, 17 * GiB, {listed(400, 16 * GiB)})})}};
  auto v = verify(plan, execs, script.source(), {milliseconds(20), milliseconds(5)});
  auto r = compose(plan, execs, v);
  EXPECT_EQ(r.outcomes[0].kind, OutcomeKind::StillHeld);
  ASSERT_EQ(r.outcomes[0].held_by.size(), 1u);
  EXPECT_EQ(r.outcomes[0].held_by[0].pid, 401);
  EXPECT_EQ(r.outcomes[0].held_by[0].comm, "p401");
  EXPECT_NE(r.outcomes[0].why.find("--tree"), std::string::npos);
}

TEST(ReapVerifier, GonePidIsReleasedWhenItsLastKeeperIsGone) {
  Plan p;
  p.backend_available = true;
  for (pid_t k : {301, 302}) {
    Target t;
    t.pid = k;
    t.keeps = {300};
    t.reasons.push_back({ReasonKind::InheritedHolder, std::nullopt, 300});
    p.targets.push_back(t);
  }
  p.gone.push_back({300, "python", {{0, 8 * GiB}}, {301, 302}});
  p.gpus.push_back({0, 9 * GiB, GiB});
  std::vector<Execution> execs{exited(301), exited(302)};
  Script script{
      {make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 9 * GiB, {listed(300, 8 * GiB)})}), all_back()}};
  auto v = verify(p, execs, script.source(), kFast);
  EXPECT_EQ(v.polls, 2);
  auto r = compose(p, execs, v);
  for (const auto& o : r.outcomes) {
    EXPECT_EQ(o.kind, OutcomeKind::Released);
    EXPECT_EQ(o.released_bytes, 0u);  // the memory is counted once, on the gone PID
  }
  ASSERT_EQ(r.gone.size(), 1u);
  EXPECT_TRUE(r.gone[0].released);
  EXPECT_EQ(r.gone[0].bytes, 8 * GiB);
  EXPECT_EQ(r.freed[0].bytes, 8 * GiB);
  EXPECT_EQ(r.exit_code, kExitReleased);
}

TEST(ReapVerifier, GonePidWithASurvivingKeeperIsNotAwaited) {
  Plan p;
  p.backend_available = true;
  for (pid_t k : {301, 302}) {
    Target t;
    t.pid = k;
    t.keeps = {300};
    p.targets.push_back(t);
  }
  p.gone.push_back({300, std::nullopt, {{0, 8 * GiB}}, {301, 302}});
  Execution survivor;
  survivor.pid = 302;
  survivor.status = ExecStatus::Survived;
  survivor.why = "in uninterruptible sleep (D)";
  std::vector<Execution> execs{exited(301), survivor};
  Script script{{make_snapshot({proc(1, 0, 1), holder(302, 1, 300, 0, 'D')},
                               {gpu(0, 0, 9 * GiB, {listed(300, 8 * GiB)})})}};
  auto v = verify(p, execs, script.source(), kFast);
  EXPECT_EQ(v.polls, 1);  // nothing that can come back, nothing to wait for
  auto r = compose(p, execs, v);
  EXPECT_EQ(r.outcomes[1].kind, OutcomeKind::Survived);
  EXPECT_FALSE(r.gone[0].attempted);
  EXPECT_EQ(r.exit_code, kExitHeld);
}

TEST(ReapVerifier, WithoutADriverAnExitedTargetHoldingNothingIsReleased) {
  Plan p;
  p.targets.push_back(listed_target(500, 0, 0));
  p.targets[0].gpus.clear();
  std::vector<Execution> execs{exited(500)};
  Script script{{make_snapshot({proc(1, 0, 1)}, {})}};
  auto v = verify(p, execs, script.source(), kFast);
  EXPECT_EQ(v.polls, 1);
  auto r = compose(p, execs, v);
  EXPECT_EQ(r.outcomes[0].kind, OutcomeKind::Released);
  EXPECT_FALSE(r.outcomes[0].released_bytes.has_value());  // no driver, no figure
}

TEST(ReapVerifier, PollsTheDriverAloneAndScansProcOnlyToNameHolders) {
  Plan plan = trainer_plan();
  std::vector<Execution> execs{exited(400)};
  int driver_polls = 0, full_scans = 0, stats = 0;
  ReleaseSource source;
  source.full = [&] {
    ++full_scans;
    return make_snapshot({proc(1, 0, 1), holder(401, 1, 400)},
                         {gpu(0, 0, 17 * GiB, {listed(400, 16 * GiB)})});
  };
  source.stat = [&](pid_t) -> std::optional<core::ProcessStat> {
    ++stats;
    return std::nullopt;  // the trainer is gone
  };
  // Released on the third poll: no full scan at all.
  source.driver = [&] {
    ++driver_polls;
    core::BackendReport r;
    r.available = true;
    r.gpus.push_back(driver_polls < 3 ? gpu(0, 0, 17 * GiB, {listed(400, 16 * GiB)})
                                      : gpu(0, 0, GiB, {}));
    return driver_snapshot(core::combine({r}));
  };
  auto v = verify(plan, execs, source, kFast);
  EXPECT_EQ(driver_polls, 3);
  EXPECT_EQ(full_scans, 0);
  EXPECT_GE(stats, 3);
  EXPECT_TRUE(v.listings[0].released);

  // Never released: one full scan at the end names the worker that keeps it.
  driver_polls = -1000;
  auto held = verify(plan, execs, source, {milliseconds(20), milliseconds(5)});
  EXPECT_EQ(full_scans, 1);
  ASSERT_EQ(held.listings[0].held_by.size(), 1u);
  EXPECT_EQ(held.listings[0].held_by[0].pid, 401);
}

TEST(ReapVerifier, AnUnreadableDriverListIsNoEvidenceOfRelease) {
  Plan plan = trainer_plan();
  std::vector<Execution> execs{exited(400)};
  ReleaseSource source;
  source.full = [] { return make_snapshot({proc(1, 0, 1)}, {}); };
  source.stat = [](pid_t) -> std::optional<core::ProcessStat> { return std::nullopt; };
  source.driver = [] {
    core::BackendReport r;
    r.available = false;  // NVML failed while we waited
    r.error = "driver not loaded";
    return driver_snapshot(core::combine({r}));
  };
  auto v = verify(plan, execs, source, {milliseconds(20), milliseconds(5)});
  EXPECT_FALSE(v.listings[0].released);
  EXPECT_TRUE(v.listings[0].unreadable);
  auto r = compose(plan, execs, v);
  EXPECT_EQ(r.outcomes[0].kind, OutcomeKind::StillHeld);
  EXPECT_NE(r.outcomes[0].why.find("could not be checked"), std::string::npos) << r.outcomes[0].why;
}

TEST(ReapVerifier, AZombieWhoseParentWasKilledIsAwaitedBriefly) {
  Plan p;
  Target parent = listed_target(600, 0, 0);
  parent.gpus.clear();
  Target zombie;
  zombie.pid = 601;
  zombie.start_ticks = 1601;
  zombie.action = Action::Zombie;
  zombie.parent = {600, "p600"};
  p.targets = {parent, zombie};
  std::vector<Execution> execs{exited(600), Execution{601}};
  int looks = 0;
  ReleaseSource source;
  source.full = [] { return make_snapshot({}, {}); };
  source.driver = [] { return driver_snapshot({}); };
  source.stat = [&](pid_t pid) -> std::optional<core::ProcessStat> {
    if (pid != 601 || ++looks > 3) return std::nullopt;  // reaped by init after a few looks
    core::ProcessStat st;
    st.pid = 601;
    st.state = 'Z';
    st.start_ticks = 1601;
    return st;
  };
  auto v = verify(p, execs, source, kFast);
  EXPECT_GE(v.polls, 3);
  EXPECT_EQ(v.reaped_zombies, std::vector<pid_t>{601});
  auto r = compose(p, execs, v);
  EXPECT_EQ(r.outcomes[1].kind, OutcomeKind::Released);
  EXPECT_EQ(r.exit_code, kExitReleased);
}

}  // namespace
}  // namespace gpureap::reap
