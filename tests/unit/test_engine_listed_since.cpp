// When the engine first saw each PID the driver lists (core::ProcView::listed_since): kept
// while the PID stays listed or its GPU did not answer, dropped when a GPU that answered no
// longer lists it, taken anew when it comes back;
// and the clock is /proc's (a process started after a reading has a later start time).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include "engine/listed_since.h"
#include "procfs/proc_fs.h"

namespace gpureap::engine {
namespace {

core::DriverReading driver_listing(const std::vector<std::vector<pid_t>>& per_gpu) {
  core::DriverReading r;
  unsigned index = 0;
  for (const auto& pids : per_gpu) {
    core::Gpu g;
    g.key = "nvidia:GPU-" + std::to_string(index);
    g.index = index++;
    for (pid_t pid : pids) {
      core::DriverProcess p;
      p.pid = pid;
      g.processes.push_back(p);
    }
    r.gpus.push_back(std::move(g));
  }
  return r;
}

using Since = std::map<pid_t, uint64_t>;

TEST(ListedSince, KeepsTheFirstSightingWhileListedAndForgetsItWhenTheListingGoes) {
  ListedSince l;
  EXPECT_EQ(l.update(driver_listing({{10, 11}}), 100, nullptr), (Since{{10, 100}, {11, 100}}));
  // 10 stays (moved to another GPU: still listed), 11 goes, 12 comes.
  EXPECT_EQ(l.update(driver_listing({{}, {12, 10}}), 150, nullptr), (Since{{10, 100}, {12, 150}}));
  // Listed on two GPUs: one entry, the first sighting.
  EXPECT_EQ(l.update(driver_listing({{10, 12}, {10}}), 160, nullptr),
            (Since{{10, 100}, {12, 150}}));
  // Every GPU answered and none lists them: the listings went.
  EXPECT_EQ(l.update(driver_listing({{}, {}}), 200, nullptr), Since{});
  // Listed again: first seen now, whatever ran under the number meanwhile.
  EXPECT_EQ(l.update(driver_listing({{10}}), 250, nullptr), (Since{{10, 250}}));
}

TEST(ListedSince, AReadingThatFailedKeepsWhatItCouldNotList) {
  ListedSince l;
  EXPECT_EQ(l.update(driver_listing({{10}, {11}}), 100, nullptr), (Since{{10, 100}, {11, 100}}));
  // GPU 1's process list failed for a moment: 11 keeps its first sighting.
  auto failed = driver_listing({{10}, {}});
  failed.gpus[1].processes_error = "Unknown Error";
  EXPECT_EQ(l.update(failed, 150, nullptr), (Since{{10, 100}, {11, 100}}));
  EXPECT_EQ(l.update(driver_listing({{10}, {11}}), 200, nullptr), (Since{{10, 100}, {11, 100}}));
  // The backend did not answer at all (its GPUs are missing): nothing is dropped either.
  EXPECT_EQ(l.update(driver_listing({}), 250, nullptr), (Since{{10, 100}, {11, 100}}));
  // A complete reading without 11: its listing went.
  EXPECT_EQ(l.update(driver_listing({{10}, {}}), 300, nullptr), (Since{{10, 100}}));
}

// A GPU whose process lists failed in part (one kind refused, one MIG instance) lists the rest:
// they are dated from their first sighting like any, and what it no longer lists stays.
TEST(ListedSince, AGpuWhoseListsFailedInPartDatesWhatItDoesList) {
  ListedSince l;
  auto partial = driver_listing({{10, 11}});
  partial.gpus[0].processes_error = "the graphics list was refused";
  EXPECT_EQ(l.update(partial, 100, nullptr), (Since{{10, 100}, {11, 100}}));
  partial = driver_listing({{10}});
  partial.gpus[0].processes_error = "the graphics list was refused";
  EXPECT_EQ(l.update(partial, 150, nullptr), (Since{{10, 100}, {11, 100}}));
  // Answered in full without 11: its listing went.
  EXPECT_EQ(l.update(driver_listing({{10}}), 200, nullptr), (Since{{10, 100}}));
}

// Processes that hold a device file, started at the given ticks.
core::ProcView processes_started(const std::map<pid_t, uint64_t>& starts) {
  core::ProcView v;
  for (const auto& [pid, start] : starts) {
    core::HostProcess p;
    p.stat.pid = pid;
    p.stat.start_ticks = start;
    p.devices.emplace_back();
    v.processes.push_back(p);
  }
  return v;
}

// The process under each number in the view read after its first sighting is kept with the
// listing, by its start time; a later view does not change it, nor does a view older than the
// reading (it may show the number's earlier process) or one whose process started after it.
TEST(ListedSince, KeepsTheProcessAFreshViewShowedAtTheFirstSighting) {
  ListedSince l;
  auto fresh = processes_started({{10, 90}, {11, 100}, {12, 101}});
  l.update(driver_listing({{10, 11, 12}}), 100, &fresh);
  EXPECT_EQ(l.first_processes(), (Since{{10, 90}, {11, 100}}));
  // Later: another process under 10 in the view changes nothing; 13 is first seen without a
  // fresh view, and 14 with one that has no process under it.
  auto later = processes_started({{10, 120}, {13, 110}});
  l.update(driver_listing({{10, 11, 12, 13}}), 130, nullptr);
  l.update(driver_listing({{10, 11, 12, 13, 14}}), 140, &later);
  EXPECT_EQ(l.first_processes(), (Since{{10, 90}, {11, 100}}));
  // A GPU that failed keeps it; one that answers without 10 drops it, and a new sighting takes
  // the process then.
  auto failed = driver_listing({{}});
  failed.gpus[0].processes_error = "Unknown Error";
  l.update(failed, 150, &later);
  EXPECT_EQ(l.first_processes(), (Since{{10, 90}, {11, 100}}));
  l.update(driver_listing({{11}}), 160, &later);
  EXPECT_EQ(l.first_processes(), (Since{{11, 100}}));
  EXPECT_EQ(l.update(driver_listing({{10, 11}}), 170, &later), (Since{{10, 170}, {11, 100}}));
  EXPECT_EQ(l.first_processes(), (Since{{10, 120}, {11, 100}}));
}

// A listing first seen after a holder of its number ended, since the GPU last answered without
// it: it may be that holder's context (its worker keeps it), and the process that took the
// number since is not the listed one. A holder that ended before that reading, or one that held
// no GPU file, says nothing: the listing is the process there now.
TEST(ListedSince, AHolderOfTheNumberThatEndedSinceTheLastReadingMayBeTheListedOne) {
  using Ends = std::map<pid_t, std::vector<core::ProcessEnd>>;
  ListedSince l;
  l.update(driver_listing({{}}), 100, nullptr);
  auto fresh = processes_started({{10, 130}, {11, 131}, {12, 132}, {13, 133}});
  const Ends ends{
      {10, {core::ProcessEnd{80, 125, true, std::nullopt}}},   // ended since tick 100: maybe it
      {11, {core::ProcessEnd{60, 90, true, std::nullopt}}},    // ended before tick 100
      {12, {core::ProcessEnd{70, 120, false, std::nullopt}}},  // held no GPU file
      {13,
       {core::ProcessEnd{20, 40, true, std::nullopt},      // before tick 100
        core::ProcessEnd{50, 110, true, std::nullopt}}}};  // since: this one
  l.update(driver_listing({{10, 11, 12, 13}}), 140, &fresh, ends);
  EXPECT_EQ(l.first_processes(), (Since{{10, 80}, {11, 131}, {12, 132}, {13, 50}}));
  // With no view of /proc after the reading, the ended holder is still the first process.
  const Ends later{{14, {core::ProcessEnd{135, 145, true, std::nullopt}}}};
  l.update(driver_listing({{10, 11, 12, 13, 14}}), 150, nullptr, later);
  EXPECT_EQ(l.first_processes().at(14), 135u);
}

// A process that holds no device file is not the listed one: it is no first process, whose
// start would deny the listed process's children their kin. One whose fd table could not be
// read may be.
TEST(ListedSince, AProcessThatHoldsNoDeviceFileIsNoFirstProcess) {
  ListedSince l;
  auto fresh = processes_started({{10, 90}, {11, 95}});
  std::vector<core::HostProcess> ps(fresh.processes.begin(), fresh.processes.end());
  ps[0].devices.clear();
  ps[1].devices.clear();
  ps[1].fds_readable = false;
  fresh.processes = ps;
  l.update(driver_listing({{10, 11}}), 100, &fresh);
  EXPECT_EQ(l.first_processes(), (Since{{11, 95}}));
}

// A GPU never read before (the engine's first reading, or a GPU back after an error) gives no
// bound: any holder of the number that ended may be the listed one.
TEST(ListedSince, WithoutAnEarlierReadingEveryEndedHolderMayBeTheListedOne) {
  ListedSince l;
  auto fresh = processes_started({{10, 130}});
  l.update(driver_listing({{10}}), 140, &fresh,
           {{10, {core::ProcessEnd{5, 8, true, std::nullopt}}}});
  EXPECT_EQ(l.first_processes(), (Since{{10, 5}}));
}

// A listing kept while its GPU did not answer may have ended and come back meanwhile: a holder
// of the number that began after the listed process and ended while the GPU was silent may have
// made the context listed when it answers again, and is then its first process. One that ended
// before the GPU went silent, or began before the listed process, changes nothing.
TEST(ListedSince, AHolderThatLivedUnderTheNumberWhileTheGpuWasSilentMayBeTheListedOne) {
  using Ends = std::map<pid_t, std::vector<core::ProcessEnd>>;
  ListedSince l;
  auto fresh = processes_started({{10, 90}, {11, 91}, {12, 92}});
  l.update(driver_listing({{10, 11, 12}}), 100, &fresh);
  l.update(driver_listing({{10, 11, 12}}), 110, nullptr);
  auto lost = driver_listing({{}});
  lost.gpus[0].error = "GPU is lost";
  l.update(lost, 150, nullptr);
  l.update(lost, 160, nullptr);
  EXPECT_EQ(l.first_processes(), (Since{{10, 90}, {11, 91}, {12, 92}}));
  const Ends ends{
      {10,
       {core::ProcessEnd{90, 120, true, std::nullopt},           // the listed one
        core::ProcessEnd{125, 140, true, std::nullopt}}},        // a holder while silent: it
      {11, {core::ProcessEnd{95, 105, true, std::nullopt}}},     // ended before the silence
      {12, {core::ProcessEnd{130, 140, false, std::nullopt}}}};  // held no GPU file
  EXPECT_EQ(l.update(driver_listing({{10, 11, 12}}), 170, nullptr, ends),
            (Since{{10, 100}, {11, 100}, {12, 100}}));
  EXPECT_EQ(l.first_processes(), (Since{{10, 125}, {11, 91}, {12, 92}}));
  // Once answered, a later end changes nothing.
  const Ends later{{11, {core::ProcessEnd{160, 175, true, std::nullopt}}}};
  l.update(driver_listing({{10, 11, 12}}), 180, nullptr, later);
  EXPECT_EQ(l.first_processes(), (Since{{10, 125}, {11, 91}, {12, 92}}));
}

// A restart takes on its last run's listings (core::CarriedSightings) whole: a process that
// took a number while nobody read the lists is not the listed one (the listing may have ended
// and come back as its own meanwhile, and it is then disowned: that fails safe, a newcomer
// vouched for at a first sighting would not).
TEST(ListedSince, ARestartTakesOnTheLastRunsListings) {
  ListedSince last;
  auto first = processes_started({{10, 90}, {11, 95}, {12, 97}, {13, 99}, {14, 98}});
  last.update(driver_listing({{10, 11, 12, 13, 14}}), 100, &first);
  auto later = processes_started({{10, 150}, {12, 97}, {13, 99}, {14, 98}});
  last.update(driver_listing({{10, 11, 12, 13, 14}}), 200, &later);
  core::CarriedSightings carried;
  last.carry_into(carried);
  carried.saved_at_ticks = 200;
  EXPECT_EQ(carried.last_read, (std::map<std::string, uint64_t>{{"nvidia:GPU-0", 200}}));

  ListedSince next;
  next.carry_over(carried);
  // 10: the newcomer the last run disowned; 11: gone; 12: taken during the gap; 13: the listed
  // process itself; 14: no longer listed by a GPU that answered.
  auto now = processes_started({{10, 150}, {12, 250}, {13, 99}});
  EXPECT_EQ(next.update(driver_listing({{10, 11, 12, 13}}), 300, &now),
            (Since{{10, 100}, {11, 100}, {12, 100}, {13, 100}}));
  EXPECT_EQ(next.first_processes(), (Since{{10, 90}, {11, 95}, {12, 97}, {13, 99}}));
  // Taken on once: a later listing of 14 is a first sighting.
  EXPECT_EQ(next.update(driver_listing({{10, 11, 12, 13, 14}}), 310, &now).at(14), 310u);
}

// A GPU that does not answer at the first reading after the restart says nothing of what it
// listed: its listings stay as the last run saw them.
TEST(ListedSince, ARestartKeepsWhatAGpuThatDoesNotAnswerListed) {
  core::CarriedSightings carried;
  carried.saved_at_ticks = 200;
  carried.listings.push_back({10, 100, 90, {"nvidia:GPU-0"}});
  carried.listings.push_back({11, 100, 95, {"nvidia:GPU-1"}});
  ListedSince next;
  next.carry_over(carried);
  auto reading = driver_listing({{10}, {}});
  reading.gpus[1].error = "GPU is lost";
  EXPECT_EQ(next.update(reading, 300, nullptr), (Since{{10, 100}, {11, 100}}));
}

// The last run's readings bound the span a first sighting after the restart looks back on: a
// holder that ended before them is not the listed one.
TEST(ListedSince, TheLastRunsReadingsDateAFirstSightingAfterTheRestart) {
  core::CarriedSightings carried;
  carried.saved_at_ticks = 200;
  carried.last_read = {{"nvidia:GPU-0", 200}};
  ListedSince next;
  next.carry_over(carried);
  auto fresh = processes_started({{10, 130}});
  next.update(driver_listing({{10}}), 300, &fresh,
              {{10, {core::ProcessEnd{5, 8, true, std::nullopt}}}});
  EXPECT_EQ(next.first_processes(), (Since{{10, 130}}));
}

// The clock and unit of /proc/PID/stat's start time: a process forked after a reading started
// at or after it, one forked before started at or before it.
TEST(ListedSince, BootTicksAreTheClockOfProcessStartTimes) {
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc) << proc.error().text();
  auto start_of = [&](pid_t pid) {
    auto st = proc->read_stat(pid);
    return st && *st ? (*st)->start_ticks : 0;
  };
  auto spawn = [] {
    pid_t p = ::fork();
    if (p == 0) {
      ::pause();
      ::_exit(0);
    }
    return p;
  };
  pid_t before = spawn();
  const uint64_t now = boot_ticks_now();
  pid_t after = spawn();
  const uint64_t before_start = start_of(before), after_start = start_of(after);
  for (pid_t p : {before, after}) {
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  EXPECT_LE(before_start, now);
  EXPECT_GE(after_start, now);
  EXPECT_LE(after_start, boot_ticks_now());
}

}  // namespace
}  // namespace gpureap::engine
