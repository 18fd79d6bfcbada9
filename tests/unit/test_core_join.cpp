#include <gtest/gtest.h>

#include "core/snapshot.h"
#include "snapshot_builders.h"

namespace gpureap::core {
namespace {

using namespace gpureap::testing;

Snapshot make(std::vector<HostProcess> ps, std::vector<Gpu> gpus, bool child_ns = false,
              size_t uninspectable = 0) {
  return make_snapshot(std::move(ps), std::move(gpus), {child_ns, uninspectable});
}

std::vector<Anomaly> anomalies_of(const Snapshot& s, pid_t pid) {
  const auto* r = s.row(pid);
  EXPECT_NE(r, nullptr) << "no row for " << pid;
  return r ? r->anomalies : std::vector<Anomaly>{};
}

TEST(Join, HealthyListedHolderHasNoAnomalies) {
  auto s = make({proc(1, 0, 1), proc(100, 1, 100, 'S', 100), holder(200, 100, 200)},
                {gpu(0, 0, 9 * GiB, {listed(200, 8 * GiB)})});
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_TRUE(s.rows[0].listed_by_driver);
  EXPECT_TRUE(s.rows[0].anomalies.empty());
  auto m = s.memory_summary(s.drivers.gpus[0]);
  EXPECT_EQ(m.attributed_bytes, 8 * GiB);
  EXPECT_EQ(m.unattributed_bytes, GiB);
  EXPECT_EQ(m.ghost_bytes, 0u);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(Join, GonePidWithInheritedHoldersIsNoSuchProcessNotLeaked) {
  // 300 died; its workers 301, 302 (group 300) were reparented to init and keep GPU 0's file.
  auto s = make({proc(1, 0, 1), holder(301, 1, 300), holder(302, 1, 300)},
                {gpu(0, 0, 8 * GiB, {listed(300, 8 * GiB)})});
  EXPECT_EQ(anomalies_of(s, 300), std::vector<Anomaly>{Anomaly::NoSuchProcess});
  EXPECT_FALSE(s.row(300)->process.has_value());
  for (pid_t w : {301, 302})
    EXPECT_EQ(anomalies_of(s, w),
              (std::vector<Anomaly>{Anomaly::Orphan, Anomaly::InheritedHolder}));
  auto m = s.memory_summary(s.drivers.gpus[0]);
  EXPECT_EQ(m.ghost_bytes, 8 * GiB);
  EXPECT_EQ(m.ghost_keepers, 2u);
}

TEST(Join, GonePidWithNoUnlistedHolderIsLeaked) {
  auto s = make({proc(1, 0, 1), holder(400, 1, 400)},
                {gpu(0, 0, 12 * GiB, {listed(400, 4 * GiB), listed(999, 8 * GiB)})});
  EXPECT_EQ(anomalies_of(s, 999), (std::vector<Anomaly>{Anomaly::NoSuchProcess, Anomaly::Leaked}));
  EXPECT_TRUE(anomalies_of(s, 400).empty());
}

TEST(Join, IncompleteViewNeverClaimsALeak) {
  auto s = make({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(999, 8 * GiB)})}, false, 3);
  EXPECT_EQ(anomalies_of(s, 999), std::vector<Anomaly>{Anomaly::NoSuchProcess});
  EXPECT_FALSE(s.complete());
}

TEST(Join, HolderOfAnotherGpuDoesNotKeepTheGoneContext) {
  // The gone PID was on GPU 0 (minor 0); the only unlisted holder holds /dev/nvidia1 only.
  auto s = make({proc(1, 0, 1), holder(500, 1, 500, 1)},
                {gpu(0, 0, 8 * GiB, {listed(999, 8 * GiB)}), gpu(1, 1, 0, {})});
  EXPECT_EQ(anomalies_of(s, 999), (std::vector<Anomaly>{Anomaly::NoSuchProcess, Anomaly::Leaked}));
  EXPECT_TRUE(anomalies_of(s, 500).empty());
}

TEST(Join, MinorNumberNotIndexDecidesWhichFileBelongsToAGpu) {
  // GPU index 0 is /dev/nvidia3. The gone PID's two workers (its group): the one holding
  // /dev/nvidia3 keeps it, the one holding /dev/nvidia0 does not.
  auto s = make({proc(1, 0, 1), holder(600, 1, 999, 3), holder(601, 1, 999, 0)},
                {gpu(0, 3, 8 * GiB, {listed(999, 8 * GiB)})});
  EXPECT_EQ(anomalies_of(s, 999), std::vector<Anomaly>{Anomaly::NoSuchProcess});
  EXPECT_EQ(anomalies_of(s, 600),
            (std::vector<Anomaly>{Anomaly::Orphan, Anomaly::InheritedHolder}));
  EXPECT_EQ(s.ghost(999)->keepers, std::vector<pid_t>{600});
  EXPECT_TRUE(s.ghost(999)->other_holders.empty());
}

TEST(Join, ForeignNamespaceInsteadOfNoSuchProcess) {
  auto s = make({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(77777, 8 * GiB)})}, true);
  EXPECT_EQ(anomalies_of(s, 77777), std::vector<Anomaly>{Anomaly::ForeignNamespace});
}

TEST(Join, LiveChildOfAListedProcessIsItsWorkerNotAGhost) {
  auto s =
      make({proc(1, 0, 1), proc(10, 1, 10, 'S', 10), holder(700, 10, 700), holder(701, 700, 701)},
           {gpu(0, 0, 8 * GiB, {listed(700, 8 * GiB)})});
  EXPECT_TRUE(anomalies_of(s, 700).empty());
  EXPECT_TRUE(anomalies_of(s, 701).empty());
  EXPECT_EQ(s.row(701)->shares_context_of, std::vector<pid_t>{700});
  EXPECT_TRUE(s.row(701)->keeps.empty());
  EXPECT_TRUE(s.ghosts.empty());
}

TEST(Join, StateAnomalies) {
  auto s = make({proc(1, 0, 1), proc(10, 1, 10, 'S', 10), holder(800, 10, 800, 0, 'T'),
                 holder(801, 10, 801, 0, 'D'), holder(802, 10, 802), proc(803, 802, 802, 'Z')},
                {});
  EXPECT_EQ(anomalies_of(s, 800), std::vector<Anomaly>{Anomaly::Stopped});
  EXPECT_EQ(anomalies_of(s, 801), std::vector<Anomaly>{Anomaly::Uninterruptible});
  EXPECT_EQ(anomalies_of(s, 802), std::vector<Anomaly>{Anomaly::ZombieChildren});
  EXPECT_EQ(s.row(803), nullptr);  // a zombie holds no files and is not listed
}

TEST(Join, OrphanRules) {
  auto subshell_job = holder(904, 1, 94);  // a subshell's job: group 94 gone, session 901 lives
  subshell_job.stat.sid = 901;
  auto container_init = proc(50, 1, 50, 'S', 50);
  container_init.details->ns_pids = {50, 1};
  auto s =
      make({proc(1, 0, 1), container_init,
            holder(900, 1, 90),   // parent is init, group leader 90 gone, keeps 90's context
            holder(901, 1, 901),  // a service: leads its own group under init
            holder(902, 50, 50),  // a container entrypoint's child: an init is its live parent
            holder(903, 1, 93),   // a double-forked daemon: its leader 93 exited, it keeps nothing
            subshell_job},
           {gpu(0, 0, 8 * GiB, {listed(90, 8 * GiB)})});
  EXPECT_EQ(anomalies_of(s, 900),
            (std::vector<Anomaly>{Anomaly::Orphan, Anomaly::InheritedHolder}));
  EXPECT_TRUE(anomalies_of(s, 901).empty());
  EXPECT_TRUE(anomalies_of(s, 902).empty());
  EXPECT_TRUE(anomalies_of(s, 903).empty());
  EXPECT_TRUE(anomalies_of(s, 904).empty());
  EXPECT_EQ(s.ghost(90)->keepers, std::vector<pid_t>{900});
  EXPECT_EQ(s.ghost(90)->other_holders, (std::vector<pid_t>{901, 902, 903, 904}));
}

TEST(Join, AGoneGroupLeaderDoesNotOrphanAProcessWhoseParentStillRunsTheGroup) {
  // A runner (pid 60, group 55) whose group leader 55 exited starts a holder in its group.
  auto s = make({proc(1, 0, 1), proc(60, 1, 55), holder(61, 60, 55)}, {});
  EXPECT_TRUE(anomalies_of(s, 61).empty());
}

TEST(Join, DuplicateListingCountsOnceWithTheLargerMemory) {
  auto d1 = listed(200, 2 * GiB), d2 = listed(200, 3 * GiB);
  d2.kind = GpuProcessKind::Graphics;
  auto s = make({proc(1, 0, 1), holder(200, 1, 200)}, {gpu(0, 0, GiB, {d1, d2})});
  ASSERT_EQ(s.row(200)->gpus.size(), 1u);
  EXPECT_EQ(s.row(200)->gpus[0].used_bytes, 3 * GiB);
  auto m = s.memory_summary(s.drivers.gpus[0]);
  EXPECT_EQ(m.attributed_bytes, 3 * GiB);
  EXPECT_EQ(m.unattributed_bytes, 0u);  // never negative
}

TEST(Join, NotAvailableMemoryIsUnknownNotHuge) {
  auto s =
      make({proc(1, 0, 1), holder(200, 1, 200)}, {gpu(0, 0, GiB, {listed(200, std::nullopt)})});
  EXPECT_FALSE(s.row(200)->gpus[0].used_bytes.has_value());
  EXPECT_EQ(s.memory_summary(s.drivers.gpus[0]).attributed_bytes, 0u);
}

TEST(Join, AListedPidWhoseProcessHoldsNoFileOfItsGpuWasReused) {
  // 300 is listed on GPU 0, but the process that has the number now holds no GPU file: the
  // listed process is gone, and the newcomer is neither charged nor given a row.
  auto s = make({proc(1, 0, 1), proc(300, 1, 300)}, {gpu(0, 0, GiB, {listed(300, GiB)})});
  const auto* r = s.row(300);
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->process.has_value());
  ASSERT_TRUE(r->reused.has_value());
  EXPECT_EQ(r->reused->why, ReusedPid::Why::HoldsNoFile);
  EXPECT_EQ(r->anomalies, (std::vector<Anomaly>{Anomaly::NoSuchProcess, Anomaly::Leaked}));
  auto m = s.memory_summary(s.drivers.gpus[0]);
  EXPECT_EQ(m.attributed_bytes, 0u);
  EXPECT_EQ(m.ghost_bytes, GiB);
}

TEST(Join, AZombieOnAListedPidIsAGoneListingWhoeverLeftIt) {
  // Anyone can leave an unreaped zombie on a dead job's number. It holds nothing: the listing is
  // gone, charged to nobody; where the daemon first saw the listing before the zombie started,
  // the number was reused.
  auto zombie = owned(proc(320, 1, 320, 'Z'), 65534, "nobody");
  zombie.stat.start_ticks = 9000;
  auto s = make({proc(1, 0, 1), zombie}, {gpu(0, 0, 8 * GiB, {listed(320, 8 * GiB)})});
  const auto* r = s.row(320);
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->process.has_value());
  EXPECT_EQ(r->anomalies, (std::vector<Anomaly>{Anomaly::NoSuchProcess, Anomaly::Leaked}));
  EXPECT_EQ(s.memory_summary(s.drivers.gpus[0]).attributed_bytes, 0u);
  SnapshotOptions o;
  o.listed_since = {{320, 100}};
  auto seen =
      make_snapshot({proc(1, 0, 1), zombie}, {gpu(0, 0, 8 * GiB, {listed(320, 8 * GiB)})}, o);
  ASSERT_TRUE(seen.row(320)->reused.has_value());
  EXPECT_EQ(seen.row(320)->reused->why, ReusedPid::Why::StartedAfterListing);
}

TEST(Join, AListedPidWhoseProcessStartedAfterTheListingWasFirstSeenWasReused) {
  // The process at 310 holds GPU 0's file, but started after the daemon first saw 310 listed.
  // The driver names it by the process under the number now: the newcomer's name is its own.
  auto late = holder(310, 1, 310);
  late.stat.start_ticks = 5000;
  late.stat.comm = "trainer";
  SnapshotOptions after;
  after.listed_since = {{310, 4000}};
  auto named = listed(310, GiB);
  named.name = "trainer";
  auto s = make_snapshot({proc(1, 0, 1), late}, {gpu(0, 0, GiB, {named})}, after);
  ASSERT_TRUE(s.row(310)->reused.has_value());
  EXPECT_EQ(s.row(310)->reused->why, ReusedPid::Why::StartedAfterListing);
  EXPECT_EQ(s.row(310)->reused->comm, "trainer");
  EXPECT_EQ(s.row(310)->driver_name, std::nullopt);
  EXPECT_FALSE(s.row(310)->process.has_value());
  EXPECT_EQ(s.ghost(310)->other_holders, std::vector<pid_t>{310});
  // Started before the listing was first seen: it is the listed process.
  SnapshotOptions before;
  before.listed_since = {{310, 6000}};
  auto early = make_snapshot({proc(1, 0, 1), late}, {gpu(0, 0, GiB, {listed(310, GiB)})}, before);
  EXPECT_FALSE(early.row(310)->reused.has_value());
  EXPECT_TRUE(early.row(310)->anomalies.empty());
  EXPECT_TRUE(early.ghosts.empty());
}

TEST(Join, AProcessThatTookTheNumberInTheTickTheListingWasFirstSeenWasReused) {
  // The daemon first saw 310 listed at tick 4000, and /proc then showed a process started at
  // 3990 under it. The process there now holds GPU 0's file and started in tick 4000 too (start
  // times are 10 ms ticks): not after the sighting, but not the process seen then either.
  auto late = holder(310, 1, 310);
  late.stat.start_ticks = 4000;
  SnapshotOptions o;
  o.listed_since = {{310, 4000}};
  o.listed_first_process = {{310, 3990}};
  auto s = make_snapshot({proc(1, 0, 1), late}, {gpu(0, 0, GiB, {listed(310, GiB)})}, o);
  ASSERT_TRUE(s.row(310)->reused.has_value());
  EXPECT_EQ(s.row(310)->reused->why, ReusedPid::Why::StartedAfterListing);
  EXPECT_EQ(s.row(310)->reused->start_ticks, 4000u);
  EXPECT_FALSE(s.row(310)->process.has_value());
  EXPECT_EQ(s.ghost(310)->other_holders, std::vector<pid_t>{310});
  // The process seen then, still there: the listed one, though it started in the same tick.
  o.listed_first_process = {{310, 4000}};
  auto same = make_snapshot({proc(1, 0, 1), late}, {gpu(0, 0, GiB, {listed(310, GiB)})}, o);
  EXPECT_FALSE(same.row(310)->reused.has_value());
  ASSERT_TRUE(same.row(310)->process.has_value());
  EXPECT_EQ(same.row(310)->process->stat.start_ticks, 4000u);
  EXPECT_TRUE(same.ghosts.empty());
  // No process was seen under the number then: only the sighting's time can tell.
  o.listed_first_process.clear();
  auto unseen = make_snapshot({proc(1, 0, 1), late}, {gpu(0, 0, GiB, {listed(310, GiB)})}, o);
  EXPECT_FALSE(unseen.row(310)->reused.has_value());
}

}  // namespace
}  // namespace gpureap::core
