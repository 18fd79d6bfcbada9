// The ghost verdict (src/core/ghost_verdict.cpp) over hand-built snapshots: with open-file ids
// (what kcmp gives) and without them (the kinship guess).
#include <gtest/gtest.h>

#include "snapshot_builders.h"

namespace gpureap::core {
namespace {

using namespace gpureap::testing;

// Holds /dev/nvidia<minor> on fd 5 as the open file `id`.
HostProcess sharing(pid_t pid, pid_t ppid, pid_t pgid, const std::string& id, unsigned minor = 0) {
  auto p = holder(pid, ppid, pgid, minor);
  p.devices[0].open_file = id;
  return p;
}

std::vector<pid_t> keepers(const Snapshot& s, pid_t gone) {
  const Ghost* g = s.ghost(gone);
  return g ? g->keepers : std::vector<pid_t>{};
}

TEST(GhostVerdict, OpenFilesSeparateAHealthyJobsWorkersFromAGhostsKeeper) {
  // Job 200 (listed) and its workers 201, 202 share "200:5"; gone 300's orphaned worker 301
  // holds "300:5", an open file no live listed process has.
  auto s = make_snapshot({proc(1, 0, 1), proc(10, 1, 10), sharing(200, 10, 200, "200:5"),
                          sharing(201, 200, 200, "200:5"), sharing(202, 200, 200, "200:5"),
                          sharing(301, 1, 300, "301:5")},
                         {gpu(0, 0, 30 * GiB, {listed(200, 20 * GiB), listed(300, 8 * GiB)})});
  ASSERT_EQ(s.ghosts.size(), 1u);
  EXPECT_EQ(keepers(s, 300), std::vector<pid_t>{301});
  EXPECT_TRUE(s.ghost(300)->exact);
  EXPECT_EQ(s.ghost(300)->open_files, std::vector<std::string>{"301:5"});
  for (pid_t w : {201, 202}) {
    EXPECT_TRUE(s.row(w)->anomalies.empty());
    EXPECT_EQ(s.row(w)->shares_context_of, std::vector<pid_t>{200});
    EXPECT_FALSE(s.row(w)->is_ghost());
  }
  EXPECT_TRUE(s.row(301)->has(Anomaly::InheritedHolder));
  auto m = s.memory_summary(*s.gpu(0));
  EXPECT_EQ(m.attributed_bytes, 20 * GiB);
  EXPECT_EQ(m.ghost_bytes, 8 * GiB);
  EXPECT_EQ(m.leaked_bytes, 0u);
  EXPECT_EQ(m.ghost_keepers, 1u);
  EXPECT_EQ(*m.unattributed_bytes, 2 * GiB);
}

TEST(GhostVerdict, AWorkerInTheGhostsGroupThatSharesAListedJobsFileIsStillTheJobs) {
  // 401 is in gone 400's process group, but its open file is the listed job 500's.
  auto s = make_snapshot({proc(1, 0, 1), sharing(500, 1, 500, "500:5"),
                          sharing(401, 500, 400, "500:5"), sharing(402, 1, 400, "402:5")},
                         {gpu(0, 0, 9 * GiB, {listed(500, 1 * GiB), listed(400, 8 * GiB)})});
  EXPECT_EQ(keepers(s, 400), std::vector<pid_t>{402});
  EXPECT_EQ(s.row(401)->shares_context_of, std::vector<pid_t>{500});
  EXPECT_FALSE(s.row(401)->is_ghost());
}

TEST(GhostVerdict, AFileOfAProcessListedOnAnotherGpuIsItsOwn) {
  // 600 uses GPU 1 and, as CUDA does, opened GPU 0's file too; gone 700 on GPU 0 is kept by 701.
  auto job = sharing(600, 1, 600, "600:7", 1);
  job.devices.push_back(nvidia_hold(0, {8}, "600:8"));
  auto s = make_snapshot(
      {proc(1, 0, 1), job, sharing(701, 1, 700, "701:5")},
      {gpu(0, 0, 8 * GiB, {listed(700, 8 * GiB)}), gpu(1, 1, 4 * GiB, {listed(600, 4 * GiB)})});
  EXPECT_EQ(keepers(s, 700), std::vector<pid_t>{701});
  EXPECT_TRUE(s.row(600)->keeps.empty());
}

TEST(GhostVerdict, KinKeepersComeFirstOtherUnownedHoldersAreNamedApart) {
  auto s =
      make_snapshot({proc(1, 0, 1), sharing(801, 1, 800, "801:5"), sharing(900, 1, 900, "900:5")},
                    {gpu(0, 0, 8 * GiB, {listed(800, 8 * GiB)})});
  EXPECT_EQ(keepers(s, 800), std::vector<pid_t>{801});
  EXPECT_EQ(s.ghost(800)->other_holders, std::vector<pid_t>{900});
  EXPECT_FALSE(s.row(900)->is_ghost());
}

TEST(GhostVerdict, AnUnownedHolderWithoutEvidenceIsNoKeeperAndTheMemoryIsALeak) {
  // 951 holds an open file of GPU 0 that no listed process owns, but nothing ties it to gone 950:
  // another group, another session, not its child. It is named apart and never a keeper.
  auto s = make_snapshot({proc(1, 0, 1), sharing(951, 1, 951, "951:5")},
                         {gpu(0, 0, 8 * GiB, {listed(950, 8 * GiB)})});
  EXPECT_TRUE(keepers(s, 950).empty());
  EXPECT_EQ(s.ghost(950)->other_holders, std::vector<pid_t>{951});
  EXPECT_TRUE(s.ghost(950)->leaked);
  EXPECT_TRUE(s.row(951)->anomalies.empty());
  EXPECT_TRUE(s.row(951)->keeps.empty());
}

TEST(GhostVerdict, TheDaemonSeeingItInheritTheFilesMakesAKeeper) {
  // The same setsid'd worker, and its own child, when the daemon saw 950 fork it and exit.
  SnapshotOptions o;
  o.exited_parents = {{951, 950}};
  auto s = make_snapshot({proc(1, 0, 1), sharing(951, 1, 951, "951:5"),
                          sharing(952, 951, 951, "951:5"), sharing(960, 1, 960, "960:5")},
                         {gpu(0, 0, 8 * GiB, {listed(950, 8 * GiB)})}, o);
  EXPECT_EQ(keepers(s, 950), (std::vector<pid_t>{951, 952}));
  EXPECT_EQ(s.ghost(950)->other_holders, std::vector<pid_t>{960});
  EXPECT_FALSE(s.ghost(950)->leaked);
}

// Two trainers in one process group (1100 was started by 1000, which leads the group), both
// gone, each with an orphaned worker the daemon saw it fork: 1001 holds 1000's open file, 1101
// holds 1100's. Both workers are in group 1000, which alone would make each look like a keeper
// of 1000; the forks say whose file each holds.
core::Snapshot two_gone_jobs_in_one_group() {
  SnapshotOptions o;
  o.exited_parents = {{1001, 1000}, {1101, 1100}};
  return make_snapshot(
      {proc(1, 0, 1), sharing(1001, 1, 1000, "1001:5"), sharing(1101, 1, 1000, "1101:5")},
      {gpu(0, 0, 12 * GiB, {listed(1000, 8 * GiB), listed(1100, 4 * GiB)})}, o);
}

TEST(GhostVerdict, TwoGoneJobsInOneProcessGroupAreEachKeptByTheirOwnWorker) {
  auto s = two_gone_jobs_in_one_group();
  EXPECT_EQ(keepers(s, 1000), std::vector<pid_t>{1001});
  EXPECT_EQ(keepers(s, 1100), std::vector<pid_t>{1101});
  EXPECT_EQ(s.row(1001)->keeps, std::vector<pid_t>{1000});
  EXPECT_EQ(s.row(1101)->keeps, std::vector<pid_t>{1100});
  for (pid_t gone : {1000, 1100}) {
    EXPECT_FALSE(s.ghost(gone)->leaked);
    EXPECT_TRUE(s.ghost(gone)->other_holders.empty()) << gone;
  }
  auto m = s.memory_summary(*s.gpu(0));
  EXPECT_EQ(m.ghost_bytes, 12 * GiB);
  EXPECT_EQ(m.attributed_bytes + m.ghost_bytes + *m.unattributed_bytes, 12 * GiB);
  EXPECT_EQ(m.ghost_keepers, 2u);
}

TEST(GhostVerdict, AWorkerStillChildOfAGoneTrainerKeepsThatTrainerOnly) {
  // Without the daemon: 1100 is a zombie its parent has not reaped, so its worker 1101 is still
  // its child; 1001 was reparented. Group 1000 ties 1001 to 1000, and no longer 1101.
  auto s = make_snapshot({proc(1, 0, 1), proc(1100, 1, 1000, 'Z'), sharing(1001, 1, 1000, "1001:5"),
                          sharing(1101, 1100, 1000, "1101:5")},
                         {gpu(0, 0, 12 * GiB, {listed(1000, 8 * GiB), listed(1100, 4 * GiB)})});
  EXPECT_EQ(keepers(s, 1000), std::vector<pid_t>{1001});
  EXPECT_EQ(keepers(s, 1100), std::vector<pid_t>{1101});
  // 1101 keeps 1100: no doubt about 1000 either.
  EXPECT_TRUE(s.ghost(1000)->other_holders.empty());
}

TEST(GhostVerdict, AReusedNumbersGroupAndChildrenAreNotKin) {
  // Gone 970's number is another process's now (it holds no GPU file). Its child, in group 970
  // and holding GPU 0's file, belongs to the newcomer: no keeper. 975, which shares no file
  // with anything, is only another holder.
  auto s = make_snapshot({proc(1, 0, 1), proc(970, 1, 970), sharing(971, 970, 970, "971:5"),
                          sharing(975, 1, 975, "975:5")},
                         {gpu(0, 0, 8 * GiB, {listed(970, 8 * GiB)})});
  ASSERT_TRUE(s.row(970)->reused.has_value());
  EXPECT_TRUE(keepers(s, 970).empty());
  EXPECT_EQ(s.ghost(970)->other_holders, (std::vector<pid_t>{971, 975}));
  EXPECT_TRUE(s.ghost(970)->leaked);
  EXPECT_TRUE(s.row(971)->anomalies.empty());
}

TEST(GhostVerdict, AfterTheDaemonSawTheListedProcessEndItsNumberNamesNoNewcomer) {
  // The daemon first saw 990 listed at tick 100 and saw it (started at 50) end at 200. 991,
  // started at 150 in group 990, is its worker. The number then passed to another process
  // (a holder, 250-260), whose group 990 lives on in 993 (started 255); 992 (started 300) and
  // 994 (the daemon saw "990" fork it, at 258) came later still. Only 991 keeps 990's context.
  SnapshotOptions o;
  o.listed_since = {{990, 100}};
  o.ends = {{990, {{50, 200}, {250, 260}}}};
  o.exited_parents = {{994, 990}};
  auto at = [](HostProcess p, uint64_t start) {
    p.stat.start_ticks = start;
    return p;
  };
  auto s =
      make_snapshot({proc(1, 0, 1), at(sharing(991, 1, 990, "991:5"), 150),
                     at(sharing(992, 1, 990, "992:5"), 300), at(sharing(993, 1, 990, "993:5"), 255),
                     at(sharing(994, 1, 994, "994:5"), 258)},
                    {gpu(0, 0, 8 * GiB, {listed(990, 8 * GiB)})}, o);
  EXPECT_EQ(keepers(s, 990), std::vector<pid_t>{991});
  EXPECT_EQ(s.ghost(990)->other_holders, (std::vector<pid_t>{992, 993, 994}));
  // Without the daemon's records, one scan cannot tell: the group number is taken at its word.
  auto one_shot = make_snapshot({proc(1, 0, 1), at(sharing(991, 1, 990, "991:5"), 150),
                                 at(sharing(992, 1, 990, "992:5"), 300)},
                                {gpu(0, 0, 8 * GiB, {listed(990, 8 * GiB)})});
  EXPECT_EQ(keepers(one_shot, 990), (std::vector<pid_t>{991, 992}));
}

TEST(GhostVerdict, AnEarlierOwnerOfTheNumberIsNotTheListedProcess) {
  // Another user's 960 (a holder's parent that held no file, 20-40) forked 961 at 30 and ended:
  // the daemon saw "960" fork 961 and exit. The number then went to the listed process (held a
  // GPU file, 50-200, first seen listed at 100), which forked 962 at 120. Only 962 keeps it.
  SnapshotOptions o;
  o.listed_since = {{960, 100}};
  o.ends = {{960, {{20, 40, false}, {50, 200, true}}}};
  o.exited_parents = {{961, 960}, {962, 960}};
  auto at = [](HostProcess p, uint64_t start) {
    p.stat.start_ticks = start;
    return p;
  };
  auto s = make_snapshot({proc(1, 0, 1), at(sharing(961, 1, 961, "961:5"), 30),
                          at(sharing(962, 1, 962, "962:5"), 120)},
                         {gpu(0, 0, 8 * GiB, {listed(960, 8 * GiB)})}, o);
  EXPECT_EQ(keepers(s, 960), std::vector<pid_t>{962});
  EXPECT_EQ(s.ghost(960)->other_holders, std::vector<pid_t>{961});
}

TEST(GhostVerdict, AHolderThatEndedJustBeforeTheFirstSightingIsTheListedOne) {
  // The listed process (a holder, 50-90) forked 941 at 60 and ended; 940's number went to a
  // newcomer (started at 95, holding GPU 0's file) before the daemon first saw 940 listed (100).
  // The daemon took the holder that ended since its last reading for the listed one
  // (listed_first_process 50): the newcomer is not it, and the worker keeps the context.
  SnapshotOptions o;
  o.listed_since = {{940, 100}};
  o.listed_first_process = {{940, 50}};
  o.ends = {{940, {{50, 90, true}}}};
  o.exited_parents = {{941, 940}};
  auto at = [](HostProcess p, uint64_t start) {
    p.stat.start_ticks = start;
    return p;
  };
  auto s = make_snapshot(
      {proc(1, 0, 1), at(sharing(940, 1, 940, "940:7"), 95), at(sharing(941, 1, 941, "941:5"), 60)},
      {gpu(0, 0, 8 * GiB, {listed(940, 8 * GiB)})}, o);
  ASSERT_TRUE(s.row(940)->reused.has_value());
  EXPECT_EQ(keepers(s, 940), std::vector<pid_t>{941});
  EXPECT_EQ(s.ghost(940)->other_holders, std::vector<pid_t>{940});
  // Without that first process, the holder's life does not hold the sighting: no kin of it.
  o.listed_first_process.clear();
  auto unsure = make_snapshot({proc(1, 0, 1), at(sharing(941, 1, 941, "941:5"), 60)},
                              {gpu(0, 0, 8 * GiB, {listed(940, 8 * GiB)})}, o);
  EXPECT_TRUE(keepers(unsure, 940).empty());
}

TEST(GhostVerdict, AProcessUnderANumberItIsNotVouchedForKeepsNoGhost) {
  // Gone trainer 930 (its group 930) forked rank 935 onto a number the daemon first saw listed
  // at tick 100, for a process before it: 935 (started 150) is listed there, but not vouched
  // for. It shares the trainer's open file with its worker 936. The listing under 935 may be
  // its own context: neither is planned for 930; both are other holders. 937, a leftover of 930
  // with an open file of its own, keeps it.
  auto at = [](HostProcess p, uint64_t start) {
    p.stat.start_ticks = start;
    return p;
  };
  auto scene = [&](uint64_t first_seen) {
    SnapshotOptions o;
    o.listed_since = {{935, first_seen}};
    return make_snapshot(
        {proc(1, 0, 1), at(sharing(935, 1, 930, "930:5"), 150),
         at(sharing(936, 935, 930, "930:5"), 160), at(sharing(937, 1, 930, "937:5"), 140)},
        {gpu(0, 0, 9 * GiB, {listed(930, 8 * GiB), listed(935, GiB)})}, o);
  };
  auto s = scene(100);
  ASSERT_TRUE(s.row(935)->reused.has_value());
  EXPECT_EQ(keepers(s, 930), std::vector<pid_t>{937});
  EXPECT_EQ(s.ghost(930)->other_holders, (std::vector<pid_t>{935, 936}));
  // Vouched for (the daemon first saw 935 listed after it started), 935 is a listed process
  // whose group is its own: still no keeper of 930.
  auto vouched = scene(200);
  EXPECT_FALSE(vouched.row(935)->reused.has_value());
  EXPECT_EQ(keepers(vouched, 930), std::vector<pid_t>{937});
}

TEST(GhostVerdict, AForkOfTheNumbersEarlierOwnerIsNoKinOnceItsEndIsForgotten) {
  // User A's launcher had number 920 and forked 921 (at 30), which holds GPU 0's file; the
  // daemon saw "920" fork 921 and exit. The number then passed through other holders until the
  // record of the launcher's end was evicted; the last of them (started at 400) made the
  // context listed under 920 and ended. 921 started before the listed process did: no kin.
  SnapshotOptions o;
  o.listed_since = {{920, 450}};
  o.listed_first_process = {{920, 400}};
  o.ends = {{920, {{100, 150}, {200, 250}, {300, 350}, {400, 500}}}};
  o.exited_parents = {{921, 920}};
  auto child = sharing(921, 1, 921, "921:5");
  child.stat.start_ticks = 30;
  auto s = make_snapshot({proc(1, 0, 1), child}, {gpu(0, 0, 3 * GiB, {listed(920, 3 * GiB)})}, o);
  EXPECT_TRUE(keepers(s, 920).empty());
  EXPECT_EQ(s.ghost(920)->other_holders, std::vector<pid_t>{921});
  // Nor without the first process: the listed life's own start says it.
  o.listed_first_process.clear();
  auto by_life =
      make_snapshot({proc(1, 0, 1), child}, {gpu(0, 0, 3 * GiB, {listed(920, 3 * GiB)})}, o);
  EXPECT_TRUE(keepers(by_life, 920).empty());
}

TEST(GhostVerdict, ANumbersOwnerThatHeldNoFileWhenTheListingWasSeenKeepsNothing) {
  // The listed process died before the daemon started; another process (no GPU file, 80-150)
  // had its number when the daemon first saw the listing (100), and forked 951 (at 90), which
  // holds GPU 0's file. The daemon saw it exit: 951 is nobody's keeper.
  SnapshotOptions o;
  o.listed_since = {{950, 100}};
  o.ends = {{950, {{80, 150, false}}}};
  o.exited_parents = {{951, 950}};
  auto child = sharing(951, 1, 951, "951:5");
  child.stat.start_ticks = 90;
  auto s = make_snapshot({proc(1, 0, 1), child}, {gpu(0, 0, 8 * GiB, {listed(950, 8 * GiB)})}, o);
  EXPECT_TRUE(keepers(s, 950).empty());
  EXPECT_TRUE(s.ghost(950)->leaked);
  EXPECT_TRUE(s.row(951)->anomalies.empty());
}

TEST(GhostVerdict, AZombieLeadersKinMustBeItsUserAndStartAfterIt) {
  // Zombie 980 (uid 1000, started at tick 500). 981 (same user, later) is its worker; 982 is
  // another user's process in a group of that number; 983 started before the leader did.
  auto leader = owned(proc(980, 1, 980, 'Z'), 1000, "alice");
  leader.stat.start_ticks = 500;
  auto worker = owned(sharing(981, 1, 980, "981:5"), 1000, "alice");
  worker.stat.start_ticks = 600;
  auto other = owned(sharing(982, 1, 980, "982:5"), 1001, "bob");
  other.stat.start_ticks = 700;
  auto older = owned(sharing(983, 1, 980, "983:5"), 1000, "alice");
  older.stat.start_ticks = 400;
  auto s = make_snapshot({proc(1, 0, 1), leader, worker, other, older},
                         {gpu(0, 0, 8 * GiB, {listed(980, 8 * GiB)})});
  EXPECT_EQ(keepers(s, 980), std::vector<pid_t>{981});
  EXPECT_EQ(s.ghost(980)->other_holders, (std::vector<pid_t>{982, 983}));
}

TEST(GhostVerdict, AllMembersOfAKinsOpenFileKeepItWhateverTheirGroup) {
  // 991 is gone 990's worker (its group); 992 received the same open file (a setsid'd child of
  // 991 sharing it): both keep it, on the kernel's word (kcmp) that they share one file.
  auto s =
      make_snapshot({proc(1, 0, 1), sharing(991, 1, 990, "991:5"), sharing(992, 1, 992, "991:5")},
                    {gpu(0, 0, 8 * GiB, {listed(990, 8 * GiB)})});
  EXPECT_EQ(keepers(s, 990), (std::vector<pid_t>{991, 992}));
  EXPECT_TRUE(s.ghost(990)->other_holders.empty());
}

TEST(GhostVerdict, WithoutOpenFileIdsAJobsDescendantIsItsWorkerAndTheVerdictIsAGuess) {
  auto s = make_snapshot(
      {proc(1, 0, 1), holder(200, 1, 200), holder(201, 200, 201), holder(301, 1, 300)},
      {gpu(0, 0, 16 * GiB, {listed(200, 8 * GiB), listed(300, 8 * GiB)})});
  EXPECT_EQ(s.row(201)->shares_context_of, std::vector<pid_t>{200});
  EXPECT_TRUE(s.row(201)->anomalies.empty());
  EXPECT_EQ(keepers(s, 300), std::vector<pid_t>{301});
  EXPECT_FALSE(s.ghost(300)->exact);
}

TEST(GhostVerdict, AListedChildOfTheGhostIsOwnerAndKeeper) {
  auto child = sharing(1001, 1, 1000, "1001:5");
  child.devices.push_back(nvidia_hold(0, {6}, "1001:6"));
  auto s = make_snapshot({proc(1, 0, 1), child},
                         {gpu(0, 0, 9 * GiB, {listed(1000, 6 * GiB), listed(1001, 3 * GiB)})});
  const Ghost* g = s.ghost(1000);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->keepers.empty());
  EXPECT_EQ(g->listed_keepers, std::vector<pid_t>{1001});
  EXPECT_FALSE(g->leaked);
  EXPECT_EQ(s.row(1001)->keeps, std::vector<pid_t>{1000});
  EXPECT_FALSE(s.row(1001)->is_ghost()) << "it runs a job of its own";
}

TEST(GhostVerdict, NothingHoldingAGonePidIsALeakOnlyWithACompleteView) {
  auto s = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 4 * GiB, {listed(1100, 4 * GiB)})});
  EXPECT_TRUE(s.ghost(1100)->leaked);
  EXPECT_TRUE(s.row(1100)->has(Anomaly::Leaked));
  EXPECT_EQ(s.memory_summary(*s.gpu(0)).leaked_bytes, 4 * GiB);
  SnapshotOptions o;
  o.uninspectable = 3;
  auto partial = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 4 * GiB, {listed(1100, 4 * GiB)})}, o);
  EXPECT_FALSE(partial.ghost(1100)->leaked);
  EXPECT_FALSE(partial.row(1100)->has(Anomaly::Leaked));
}

TEST(GhostVerdict, PidsOfTheHostSeenFromAContainerAreNoGhosts) {
  SnapshotOptions o;
  o.child_ns = true;
  auto s = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 4 * GiB, {listed(77777, 4 * GiB)})}, o);
  EXPECT_TRUE(s.ghosts.empty());
  EXPECT_EQ(s.memory_summary(*s.gpu(0)).ghost_bytes, 0u);
  EXPECT_EQ(s.memory_summary(*s.gpu(0)).attributed_bytes, 4 * GiB);
}

}  // namespace
}  // namespace gpureap::core
