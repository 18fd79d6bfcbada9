// Orphans on hand-built process trees: the cases that look alike (each process's parent is an
// init or a subreaper) and only the evidence that a job is gone tells apart.
#include <gtest/gtest.h>

#include "core/orphan.h"
#include "snapshot_builders.h"

namespace gpureap::core {
namespace {

using namespace gpureap::testing;
using Kind = OrphanEvidence::Kind;

ProcView view_of(std::vector<HostProcess> ps) {
  std::sort(ps.begin(), ps.end(),
            [](const HostProcess& a, const HostProcess& b) { return a.stat.pid < b.stat.pid; });
  ProcView v;
  v.processes = std::move(ps);
  return v;
}

std::optional<OrphanEvidence> evidence(const ProcView& v, pid_t pid) {
  const HostProcess* p = v.find(pid);
  EXPECT_NE(p, nullptr) << "no process " << pid;
  return p ? orphan_evidence(v, *p) : std::nullopt;
}

HostProcess in_session(HostProcess p, pid_t sid) {
  p.stat.sid = sid;
  return p;
}

void expect_orphan(const ProcView& v, pid_t pid, Kind kind, pid_t gone) {
  auto e = evidence(v, pid);
  ASSERT_TRUE(e.has_value()) << pid << " is no orphan";
  EXPECT_EQ(e->kind, kind) << pid;
  EXPECT_EQ(e->gone, gone) << pid;
}

// A container: the runtime's monitor 40 (a double-forked daemon itself, reparented to init),
// the entrypoint 50 as PID 1 of its namespace, leading its group and session (runc setsid()s it).
std::vector<HostProcess> container(std::vector<HostProcess> inside) {
  auto entrypoint = proc(50, 40, 50);
  entrypoint.details->ns_pids = {50, 1};
  inside.push_back(proc(1, 0, 1));
  inside.push_back(proc(40, 1, 40));
  inside.push_back(entrypoint);
  return inside;
}

TEST(Orphan, AContainerEntrypointsChildrenAreNotOrphans) {
  // A shell or a launcher as the entrypoint starts its processes: its direct children, and
  // theirs, are in its group and session, and it runs.
  auto v = view_of(container({holder(51, 50, 50), holder(52, 51, 50)}));
  EXPECT_FALSE(evidence(v, 51)) << "the entrypoint's child";
  EXPECT_FALSE(evidence(v, 52)) << "its grandchild";
  EXPECT_FALSE(evidence(v, 50)) << "the entrypoint, its namespace's init";
}

TEST(Orphan, AWorkerWhoseTrainerDiedInTheSameContainerIsOneWhenTheTrainerLedItsGroup) {
  // The trainer 60 led a group of its own (a launcher's setpgid, a job-control shell); it died,
  // and its worker 61 was reparented to the entrypoint, which runs another group.
  auto v = view_of(container({in_session(holder(61, 50, 60), 50)}));
  expect_orphan(v, 61, Kind::GroupLeaderGone, 60);
}

TEST(Orphan, AWorkerWhoseTrainerDiedInTheEntrypointsGroupLooksLikeItsChild) {
  // The trainer ran in the entrypoint's group: its worker now looks exactly like one of the
  // entrypoint's own children, so /proc has no evidence that its job is gone. (It is still
  // the gone trainer's ghost keeper: the ghost verdict goes by the open file it shares.)
  auto v = view_of(container({holder(62, 50, 50)}));
  EXPECT_FALSE(evidence(v, 62));
}

TEST(Orphan, WhereTheDaemonSawItsParentForkItAndExitItIsOne) {
  // The same worker as above, seen by the daemon, which followed the trainer's fork and exit.
  auto v = view_of(container({holder(62, 50, 50), holder(63, 50, 50)}));
  v.exited_parents = {{62, 60}};
  expect_orphan(v, 62, Kind::ParentExited, 60);
  EXPECT_FALSE(evidence(v, 63)) << "the entrypoint's own child";
  // That record is the most direct evidence: it is named even where a leader is gone too.
  auto w = view_of({proc(1, 0, 1), holder(71, 1, 70)});
  w.exited_parents = {{71, 70}};
  expect_orphan(w, 71, Kind::ParentExited, 70);
}

TEST(Orphan, ASessionLeaderWhoseParentExitedIsAService) {
  // daemon(3): fork, the child setsid()s, the parent exits. Started that way on purpose.
  auto v = view_of({proc(1, 0, 1), holder(81, 1, 81)});
  v.exited_parents = {{81, 80}};
  EXPECT_FALSE(evidence(v, 81));
}

TEST(Orphan, ADoubleForkedDaemonIsOne) {
  // fork, setsid, fork again, the middle one exits: the daemon 71's group and session were
  // the middle one's (70), which is gone, and init is its parent. Its parent died on purpose,
  // but that is what an orphan is; its job (70) is gone.
  auto daemon = holder(71, 1, 70);
  auto v = view_of({proc(1, 0, 1), daemon});
  expect_orphan(v, 71, Kind::GroupLeaderGone, 70);
}

TEST(Orphan, ServicesThatLeadTheirSessionAreNot) {
  // Started by init (systemd's services, daemon(3)): session leaders, never orphans.
  auto v = view_of({proc(1, 0, 1), holder(80, 1, 80), holder(81, 80, 80)});
  EXPECT_FALSE(evidence(v, 80));
  EXPECT_FALSE(evidence(v, 81)) << "a service's worker";
}

TEST(Orphan, AChildOfALiveSubreaperIsNotButOneReparentedFromADeadGroupIs) {
  // A subreaper 90 (a job supervisor, systemd --user) in its own session started 91; 92's parent
  // 93 led its own group, died, and 92 was reparented to the subreaper.
  auto v = view_of(
      {proc(1, 0, 1), proc(90, 1, 90), holder(91, 90, 90), in_session(holder(92, 90, 93), 90)});
  EXPECT_FALSE(evidence(v, 91));
  expect_orphan(v, 92, Kind::GroupLeaderGone, 93);
}

TEST(Orphan, ALeaderOfAGroupWhoseSessionLeaderIsGoneIsOne) {
  // A job a shell put in a group of its own (95, with its pipeline's 96), left running when the
  // shell (the session's leader, 94) ended, as after a logout with nohup.
  auto v = view_of(
      {proc(1, 0, 1), in_session(holder(95, 1, 95), 94), in_session(holder(96, 1, 95), 94)});
  expect_orphan(v, 95, Kind::SessionLeaderGone, 94);
  expect_orphan(v, 96, Kind::SessionLeaderGone, 94);
}

TEST(Orphan, ALiveParentInTheJobStillRunsIt) {
  // A runner 101 whose harness (100, its group's and session's leader) exited starts a holder
  // 102 in that group: the runner is the orphan, not what it starts.
  auto v = view_of({proc(1, 0, 1), proc(101, 1, 100), holder(102, 101, 100)});
  expect_orphan(v, 101, Kind::GroupLeaderGone, 100);
  EXPECT_FALSE(evidence(v, 102));
}

TEST(Orphan, AZombieLeaderIsGone) {
  // The trainer 110 was killed and nobody reaped it yet: its job has ended all the same.
  auto v = view_of({proc(1, 0, 1), proc(109, 1, 109), proc(110, 109, 110, 'Z', 109),
                    in_session(holder(111, 1, 110), 109)});
  expect_orphan(v, 111, Kind::GroupLeaderGone, 110);
}

TEST(Orphan, ALeaderThisProcfsCannotSeeIsNoEvidence) {
  // Seen from inside a container, a group or session made outside it reads as 0.
  auto v = view_of({proc(1, 0, 0), in_session(holder(7, 1, 0), 0)});
  EXPECT_FALSE(evidence(v, 7));
}

}  // namespace
}  // namespace gpureap::core
