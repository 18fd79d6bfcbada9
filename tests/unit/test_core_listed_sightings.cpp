// A command's own scan taking on the daemon's sightings of the driver's lists: only for the
// PIDs listed now, only from the same boot and PID namespace, and never over its own.
#include <gtest/gtest.h>

#include "core/listed_sightings.h"
#include "core/snapshot.h"
#include "snapshot_builders.h"

namespace gpureap::core {
namespace {

using namespace gpureap::testing;

ListedSightings daemons_sightings() {
  ListedSightings s;
  s.boot_time = 1'700'000'000;
  s.pid_namespace = 4026531836;
  s.since = {{310, 4000}, {320, 4100}};
  // 310's listed process (started at 3000, first seen listed at 4000) ended at 4100.
  s.first_process = {{310, 3000}, {320, 4050}};
  s.ends = {{310, {ProcessEnd{3000, 4100, true, std::nullopt}}}};
  // The daemon saw it fork 400 and 401, and 999 fork 402, and exit.
  s.forks = {{400, {310, 3100}}, {401, {310, 3200}}, {402, {999, 3300}}};
  return s;
}

ProcView own_view(long long boot_time) {
  ProcView v;
  v.boot_time = boot_time;
  v.pid_namespace = 4026531836;
  auto newcomer = holder(310, 1, 310);
  newcomer.stat.start_ticks = 5000;
  auto worker = holder(400, 1, 310);
  worker.stat.start_ticks = 3100;
  auto other = holder(401, 1, 401);  // another process under the number the daemon saw forked
  other.stat.start_ticks = 6000;
  auto unlisted_parents = holder(402, 1, 402);
  unlisted_parents.stat.start_ticks = 3300;
  v.processes = std::vector<HostProcess>{proc(1, 0, 1), newcomer, worker, other, unlisted_parents};
  return v;
}

TEST(ListedSightings, AreTakenOnForThePidsListedNowAlone) {
  ProcView v = own_view(1'700'000'001);
  const DriverReading listed_now = drivers({gpu(0, 0, GiB, {listed(310, GiB)})});
  adopt_sightings(v, listed_now, daemons_sightings());
  EXPECT_EQ(v.listed_since, (std::map<pid_t, uint64_t>{{310, 4000}}));
  EXPECT_EQ(v.listed_first_process, (std::map<pid_t, uint64_t>{{310, 3000}}));
  ASSERT_EQ(v.ends.count(310), 1u);
  EXPECT_EQ(v.ends.at(310).front().end_ticks, 4100u);
  // The fork of the very process this view shows, by a PID listed now: nothing else.
  EXPECT_EQ(v.exited_parents, (std::map<pid_t, pid_t>{{400, 310}}));
  // And the join then disowns the process that took the number after the daemon's sighting.
  auto s = join(std::move(v), listed_now, "host", std::chrono::system_clock::now());
  ASSERT_NE(s.row(310), nullptr);
  ASSERT_TRUE(s.row(310)->reused.has_value());
  EXPECT_EQ(s.row(310)->reused->why, ReusedPid::Why::StartedAfterListing);
  EXPECT_FALSE(s.row(310)->process.has_value());
  // The worker the daemon saw the listed process fork keeps its context; the newcomer does not.
  ASSERT_NE(s.ghost(310), nullptr);
  EXPECT_EQ(s.ghost(310)->keepers, std::vector<pid_t>{400});
}

TEST(ListedSightings, NeverReplaceTheViewsOwn) {
  ProcView v = own_view(1'700'000'000);
  v.listed_since = {{310, 6000}};
  adopt_sightings(v, drivers({gpu(0, 0, GiB, {listed(310, GiB)})}), daemons_sightings());
  EXPECT_EQ(v.listed_since.at(310), 6000u);
}

TEST(ListedSightings, SpeakOnlyOfTheSameBootAndPidNamespace) {
  const DriverReading listed_now = drivers({gpu(0, 0, GiB, {listed(310, GiB)})});
  auto adopted = [&](ListedSightings s, ProcView v) {
    adopt_sightings(v, listed_now, s);
    return !v.listed_since.empty() || !v.listed_first_process.empty() || !v.ends.empty() ||
           !v.exited_parents.empty();
  };
  // A clock slewed by a second between the two reads of btime: the same boot.
  EXPECT_TRUE(adopted(daemons_sightings(), own_view(1'699'999'999)));
  // Another boot: its ticks and PIDs name other processes.
  EXPECT_FALSE(adopted(daemons_sightings(), own_view(1'700'000'060)));
  EXPECT_EQ(sightings_mismatch(daemons_sightings(), own_view(1'700'000'060)),
            "they come from another boot");
  ProcView unknown_boot = own_view(0);
  unknown_boot.boot_time.reset();
  EXPECT_FALSE(adopted(daemons_sightings(), unknown_boot));
  // A daemon in another PID namespace than this view's (two containers' alike), or one whose
  // namespace is unknown.
  ListedSightings in_container = daemons_sightings();
  in_container.pid_namespace = 4026532210;
  EXPECT_FALSE(adopted(in_container, own_view(1'700'000'000)));
  EXPECT_EQ(sightings_mismatch(in_container, own_view(1'700'000'000)),
            "they come from another PID namespace");
  in_container.pid_namespace.reset();
  EXPECT_FALSE(adopted(in_container, own_view(1'700'000'000)));
}

TEST(ListedSightings, AreWhatADaemonsViewCarries) {
  ProcView daemons;
  daemons.boot_time = 1'700'000'000;
  daemons.pid_namespace = 4026531836;
  daemons.listed_since = {{310, 4000}};
  daemons.listed_first_process = {{310, 3990}};
  daemons.ends = {{310, {ProcessEnd{3000, 3500, true, std::nullopt}}}};
  ListedSightings s = sightings_of(daemons);
  EXPECT_EQ(s.boot_time, daemons.boot_time);
  EXPECT_EQ(s.pid_namespace, daemons.pid_namespace);
  EXPECT_EQ(s.since, daemons.listed_since);
  EXPECT_EQ(s.first_process, daemons.listed_first_process);
  EXPECT_EQ(s.ends, daemons.ends);
  EXPECT_TRUE(s.forks.empty());  // of no process the view shows
  daemons.exited_parents = {{400, 310}};
  auto worker = proc(400, 1, 310);
  worker.stat.start_ticks = 3100;
  daemons.processes = std::vector<HostProcess>{worker};
  s = sightings_of(daemons);
  ASSERT_EQ(s.forks.count(400), 1u);
  EXPECT_EQ(s.forks.at(400).parent, 310);
  EXPECT_EQ(s.forks.at(400).child_start, 3100u);
}

}  // namespace
}  // namespace gpureap::core
