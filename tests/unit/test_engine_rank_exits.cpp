// engine::RankExits: which ranks of a distributed job one view to the next shows ended, with
// when and how, kept while their launcher lives.
#include <gtest/gtest.h>

#include "engine/rank_exits.h"
#include "snapshot_builders.h"

namespace gpureap::engine {
namespace {

using namespace gpureap::testing;

core::HostProcess job_rank(pid_t pid, pid_t launcher, unsigned local_rank, char state = 'S') {
  auto p = owned(holder(pid, launcher, launcher, local_rank), 1000, "alice");
  if (state == 'Z') {
    p = owned(proc(pid, launcher, launcher, 'Z'), 1000, "alice");
    return p;
  }
  core::RankLabels l;
  l.local_rank = local_rank;
  l.local_world_size = 4;
  p.details->rank_labels = l;
  return p;
}

core::ProcView rank_view(std::vector<core::HostProcess> ps, SnapshotOptions o = {}) {
  ps.push_back(proc(1, 0, 1));
  ps.push_back(owned(proc(500, 1, 500), 1000, "alice"));  // the launcher
  return make_snapshot(std::move(ps), {}, std::move(o)).proc;
}

// Asked for a zombie's wait status: says SIGKILL for 504, and records whom it was asked about.
struct Statuses {
  std::vector<pid_t> asked;
  RankExits::ReadStatus reader() {
    return [this](pid_t pid) -> std::optional<int> {
      asked.push_back(pid);
      return pid == 504 ? std::optional<int>(9) : std::nullopt;
    };
  }
};

TEST(RankExits, ARankThatBecameAZombieEndedWithItsWaitStatus) {
  RankExits exits;
  Statuses st;
  exits.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), job_rank(503, 500, 2),
                           job_rank(504, 500, 3)}),
                5000, st.reader());
  EXPECT_TRUE(exits.exits().empty());
  exits.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), job_rank(503, 500, 2),
                           job_rank(504, 500, 3, 'Z')}),
                6000, st.reader());
  ASSERT_EQ(exits.exits().size(), 1u);
  const auto& e = exits.exits()[0];
  EXPECT_EQ(e, (core::RankExit{500, 1500, 504, 1504, 3u, 6000, 9, true}));
  EXPECT_EQ(st.asked, std::vector<pid_t>{504});
  // Recorded once: the zombie of the next view is no new end, and the record stays while the
  // launcher lives.
  exits.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), job_rank(503, 500, 2)}),
                7000, st.reader());
  ASSERT_EQ(exits.exits().size(), 1u);
  EXPECT_EQ(exits.exits()[0].end_ticks, 6000u);
}

// A view that shows an ended rank live again is a stale read (a process ended once): its end
// keeps the date it was first seen, so the job's stall keeps its age.
TEST(RankExits, AnEndIsRecordedOnceThoughALaterViewShowsTheRankLiveAgain) {
  RankExits exits;
  Statuses st;
  const auto live = rank_view(
      {job_rank(501, 500, 0), job_rank(502, 500, 1), job_rank(503, 500, 2), job_rank(504, 500, 3)});
  const auto dead = rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), job_rank(503, 500, 2),
                               job_rank(504, 500, 3, 'Z')});
  exits.observe(live, 5000, st.reader());
  exits.observe(dead, 6000, st.reader());
  exits.observe(live, 7000, st.reader());
  exits.observe(dead, 8000, st.reader());
  exits.observe(dead, 9000, st.reader());
  ASSERT_EQ(exits.exits().size(), 1u);
  EXPECT_EQ(exits.exits()[0], (core::RankExit{500, 1500, 504, 1504, 3u, 6000, 9, true}));
}

TEST(RankExits, TheEventsEndAndAReusedNumberDateTheEndAndTheEventsSayHow) {
  RankExits exits;
  Statuses st;
  exits.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), job_rank(503, 500, 2)}),
                5000, st.reader());
  // 502 was reaped, its end seen by the events at 5500 with its wait status (SIGKILL); 503's
  // number is another process's now, which started at 5200, and no one saw how it ended.
  SnapshotOptions o;
  o.ends = {{502, {{1502, 5500, true, 9}}}};
  auto reused = owned(proc(503, 1, 503), 1001, "bob");
  reused.stat.start_ticks = 5200;
  exits.observe(rank_view({job_rank(501, 500, 0), reused}, o), 6000, st.reader());
  ASSERT_EQ(exits.exits().size(), 2u);
  EXPECT_EQ(exits.exits()[0], (core::RankExit{500, 1500, 502, 1502, 1u, 5500, 9, false}));
  EXPECT_EQ(exits.exits()[1], (core::RankExit{500, 1500, 503, 1503, 2u, 5200, std::nullopt, true}));
  EXPECT_TRUE(st.asked.empty());  // no zombie of theirs to read
}

TEST(RankExits, ARankThatLostItsLabelAndFilesWhileEndingKeepsItsNumber) {
  RankExits exits;
  Statuses st;
  exits.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), job_rank(504, 500, 3)}),
                5000, st.reader());
  // Killed: in do_exit() its environ reads empty and its files are closed, but it is no zombie
  // yet. Then a zombie.
  auto ending = owned(proc(504, 500, 500, 'R'), 1000, "alice");
  ending.stat.flags |= 0x4;  // PF_EXITING
  exits.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), ending}), 5100,
                st.reader());
  EXPECT_TRUE(exits.exits().empty());
  exits.observe(
      rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), job_rank(504, 500, 3, 'Z')}), 5200,
      st.reader());
  ASSERT_EQ(exits.exits().size(), 1u);
  EXPECT_EQ(exits.exits()[0], (core::RankExit{500, 1500, 504, 1504, 3u, 5200, 9, true}));
}

TEST(RankExits, ALauncherThatEndedTakesItsRecordsAndANonRankIsNotWatched) {
  RankExits exits;
  Statuses st;
  // 600 is a rank's DataLoader worker (inherited files): no rank, and its end is no rank's.
  auto worker = owned(holder(600, 501, 500), 1000, "alice");
  exits.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), worker}), 5000,
                st.reader());
  exits.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1)}), 5100, st.reader());
  EXPECT_TRUE(exits.exits().empty());
  exits.observe(rank_view({job_rank(501, 500, 0)}), 5200, st.reader());
  ASSERT_EQ(exits.exits().size(), 1u);
  // The launcher gone: its job's records go with it.
  exits.observe(make_snapshot({proc(1, 0, 1)}, {}).proc, 5300, st.reader());
  EXPECT_TRUE(exits.exits().empty());
}

// A scan that ran out of descriptors leaves out the processes it failed to read, as if they had
// ended: a rank missing from such a view has not ended for that (its job is healthy, and an
// enforced policy would end it as stalled). The next complete view that lacks it says it did.
TEST(RankExits, ARankMissingFromAViewWithScanFailuresHasNotEndedForThat) {
  RankExits exits;
  Statuses st;
  exits.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1)}), 5000, st.reader());
  auto failed = rank_view({job_rank(501, 500, 0)});
  failed.scan_failures.push_back("process 502: cannot read its stat: Too many open files");
  exits.observe(failed, 5100, st.reader());
  EXPECT_TRUE(exits.exits().empty());
  exits.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1)}), 5200, st.reader());
  EXPECT_TRUE(exits.exits().empty());
  // Its exit event is the kernel's word, whatever the scan failed to read.
  SnapshotOptions o;
  o.ends = {{502, {{1502, 5250, true, 9}}}};
  auto ended = rank_view({job_rank(501, 500, 0)}, o);
  ended.scan_failures = failed.scan_failures;
  exits.observe(ended, 5300, st.reader());
  ASSERT_EQ(exits.exits().size(), 1u);
  EXPECT_EQ(exits.exits()[0], (core::RankExit{500, 1500, 502, 1502, 1u, 5250, 9, false}));
}

// A restart: the last run watched four ranks; while no daemon ran, 503 ended and was reaped,
// and 504 ended unreaped. The next run's first view records both, as ended by then; a run that
// had not taken the watched ranks on sees only ranks missing, which a rank yet to start is too.
TEST(RankExits, RanksTheLastRunWatchedThatEndedWhileNoneRanAreRecordedAtTheFirstView) {
  RankExits last;
  Statuses st;
  last.observe(rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), job_rank(503, 500, 2),
                          job_rank(504, 500, 3)}),
               5000, st.reader());
  const auto watched = last.watched();
  ASSERT_EQ(watched.size(), 4u);
  EXPECT_EQ(watched[3], (core::CarriedSightings::WatchedRank{504, 1504, 500, 1500, 3u}));

  const auto after =
      rank_view({job_rank(501, 500, 0), job_rank(502, 500, 1), job_rank(504, 500, 3, 'Z')});
  RankExits forgetful;
  forgetful.observe(after, 9000, st.reader());
  EXPECT_TRUE(forgetful.exits().empty());

  RankExits next;
  next.carry_over({}, watched);
  next.observe(after, 9000, st.reader());
  EXPECT_EQ(next.exits(),
            (std::vector<core::RankExit>{{500, 1500, 503, 1503, 2u, 9000, std::nullopt, true},
                                         {500, 1500, 504, 1504, 3u, 9000, 9, true}}));
  // The ranks that live are watched on.
  EXPECT_EQ(next.watched().size(), 2u);

  // A launcher that ended meanwhile took its job: nothing is recorded of its ranks.
  RankExits orphaned;
  orphaned.carry_over({}, watched);
  orphaned.observe(make_snapshot({proc(1, 0, 1)}, {}).proc, 9000, st.reader());
  EXPECT_TRUE(orphaned.exits().empty());
  EXPECT_TRUE(orphaned.watched().empty());
}

}  // namespace
}  // namespace gpureap::engine
