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
  s.since = {{310, 4000}, {320, 4100}};
  s.first_process = {{310, 3990}, {320, 4050}};
  s.ends = {{310, {ProcessEnd{3000, 3500, true, std::nullopt}}}};
  return s;
}

ProcView own_view(long long boot_time) {
  ProcView v;
  v.boot_time = boot_time;
  auto newcomer = holder(310, 1, 310);
  newcomer.stat.start_ticks = 5000;
  v.processes = std::vector<HostProcess>{proc(1, 0, 1), newcomer};
  return v;
}

TEST(ListedSightings, AreTakenOnForThePidsListedNowAlone) {
  ProcView v = own_view(1'700'000'001);
  const DriverReading listed_now = drivers({gpu(0, 0, GiB, {listed(310, GiB)})});
  adopt_sightings(v, listed_now, daemons_sightings());
  EXPECT_EQ(v.listed_since, (std::map<pid_t, uint64_t>{{310, 4000}}));
  EXPECT_EQ(v.listed_first_process, (std::map<pid_t, uint64_t>{{310, 3990}}));
  ASSERT_EQ(v.ends.count(310), 1u);
  EXPECT_EQ(v.ends.at(310).front().end_ticks, 3500u);
  // And the join then disowns the process that took the number after the daemon's sighting.
  auto s = join(std::move(v), listed_now, "host", std::chrono::system_clock::now());
  ASSERT_NE(s.row(310), nullptr);
  ASSERT_TRUE(s.row(310)->reused.has_value());
  EXPECT_EQ(s.row(310)->reused->why, ReusedPid::Why::StartedAfterListing);
  EXPECT_FALSE(s.row(310)->process.has_value());
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
    return !v.listed_since.empty() || !v.listed_first_process.empty() || !v.ends.empty();
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
  // A daemon in another PID namespace than this view's.
  ListedSightings in_container = daemons_sightings();
  in_container.in_child_pid_namespace = true;
  EXPECT_FALSE(adopted(in_container, own_view(1'700'000'000)));
}

TEST(ListedSightings, AreWhatADaemonsViewCarries) {
  ProcView daemons;
  daemons.boot_time = 1'700'000'000;
  daemons.listed_since = {{310, 4000}};
  daemons.listed_first_process = {{310, 3990}};
  daemons.ends = {{310, {ProcessEnd{3000, 3500, true, std::nullopt}}}};
  ListedSightings s = sightings_of(daemons);
  EXPECT_EQ(s.boot_time, daemons.boot_time);
  EXPECT_EQ(s.since, daemons.listed_since);
  EXPECT_EQ(s.first_process, daemons.listed_first_process);
  EXPECT_EQ(s.ends, daemons.ends);
}

}  // namespace
}  // namespace gpureap::core
