#include "engine/listed_since.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>

namespace gpureap::engine {

uint64_t boot_ticks_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  const auto hz = static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
  // As the kernel turns a start time in nanoseconds into ticks: rounded down.
  const uint64_t ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
  return ns / (1000000000ull / hz);
}

void ListedSince::carry_into(core::CarriedSightings& out) const {
  for (const auto& [pid, l] : listings_)
    out.listings.push_back({pid, l.since, l.first_process, {l.gpus.begin(), l.gpus.end()}});
  out.last_read = last_read_;
}

void ListedSince::carry_over(const core::CarriedSightings& carried) {
  for (const auto& l : carried.listings)
    listings_[l.pid] =
        Listing{l.since, l.first_process, {l.gpus.begin(), l.gpus.end()}, std::nullopt};
  for (const auto& [key, at] : carried.last_read) last_read_.try_emplace(key, at);
}

const std::map<pid_t, uint64_t>& ListedSince::update(
    const core::DriverReading& drivers, uint64_t now_ticks, const core::ProcView* fresh,
    const std::map<pid_t, std::vector<core::ProcessEnd>>& ends) {
  // The latest life of a GPU-file holder under the number that ended since `since` and whose
  // start `fits`: the listing may be its context.
  auto latest_holder_ended = [&](pid_t pid, uint64_t since, auto fits) -> std::optional<uint64_t> {
    std::optional<uint64_t> latest;
    if (auto e = ends.find(pid); e != ends.end())
      for (const auto& life : e->second)
        if (life.held && life.end_ticks >= since && fits(life.start_ticks) &&
            (!latest || life.start_ticks > *latest))
          latest = life.start_ticks;
    return latest;
  };
  // A first sighting's process: the one under the number now, if it could be the listed one,
  // unless a holder that had the number ended since the listing GPUs last answered without it.
  auto first_process = [&](pid_t pid, const Listing& l) -> std::optional<uint64_t> {
    uint64_t quiet_since = UINT64_MAX;
    for (const auto& key : l.gpus) {
      auto at = last_read_.find(key);
      quiet_since = std::min(quiet_since, at != last_read_.end() ? at->second : 0);
    }
    // One that holds no device file is not the listed process (core/listed_identity.h), nor the
    // start of its job: kin is judged from it (core/ghost_verdict.cpp, could_be_listed).
    const core::HostProcess* p = fresh ? fresh->find(pid) : nullptr;
    std::optional<uint64_t> there;
    if (p && p->stat.start_ticks <= now_ticks && (p->holds_device() || !p->fds_readable))
      there = p->stat.start_ticks;
    const auto ended = latest_holder_ended(
        pid, quiet_since, [&](uint64_t start) { return !there || start < *there; });
    return ended ? ended : there;
  };
  std::map<pid_t, Listing> now;
  std::set<pid_t> first_seen, returned;  // returned: listed again after its GPU was silent
  std::set<std::string> answered;        // the GPUs whose process lists were read in full
  std::set<std::string> read;  // and in part: when the others were read still counts, or a
                               // GPU whose one kind of list is always refused would date
                               // every listing first seen there from its first reading
  for (const auto& g : drivers.gpus) {
    if (g.error || g.known_from_kernel) continue;
    read.insert(g.key);
    // A GPU whose process lists failed in part (one kind refused, one partition) still lists
    // the rest: those are dated as any are, or a newcomer under one would pass for it while the
    // error lasts. Its silence on the others is no evidence that they went.
    if (!g.processes_error) answered.insert(g.key);
    for (const auto& p : g.processes) {
      auto was = listings_.find(p.pid);
      if (was == listings_.end()) first_seen.insert(p.pid);
      if (was != listings_.end() && was->second.unanswered_since) returned.insert(p.pid);
      auto [at, added] = now.try_emplace(
          p.pid, was != listings_.end() ? was->second
                                        : Listing{now_ticks, std::nullopt, {}, std::nullopt});
      if (added) at->second.gpus.clear();  // the GPUs that list it in this reading
      at->second.gpus.insert(g.key);
    }
  }
  for (pid_t pid : first_seen) {
    Listing& l = now.at(pid);
    l.first_process = first_process(pid, l);
  }
  for (pid_t pid : returned) {
    Listing& l = now.at(pid);
    // One that began after the listed process and ended in the silence.
    if (auto holder = latest_holder_ended(pid, *l.unanswered_since, [&](uint64_t start) {
          return !l.first_process || start > *l.first_process;
        }))
      l.first_process = holder;
    l.unanswered_since.reset();
  }
  // A GPU that did not answer (an error, its backend down) says nothing of the PIDs it listed:
  // their first sightings stay. Dropped, a listing that comes back after a moment's driver
  // error would be dated anew, and a process that took its number meanwhile would pass for the
  // listed one.
  for (const auto& [pid, l] : listings_) {
    if (now.count(pid)) continue;
    std::optional<uint64_t> silent_since;
    for (const auto& key : l.gpus)
      if (!answered.count(key)) {
        auto at = last_read_.find(key);  // its reading before this one
        const uint64_t last = at != last_read_.end() ? at->second : 0;
        silent_since = std::min(silent_since.value_or(last), last);
      }
    if (!silent_since) continue;
    Listing kept = l;
    if (!kept.unanswered_since) kept.unanswered_since = silent_since;
    now.emplace(pid, kept);
  }
  for (const auto& key : read) last_read_[key] = now_ticks;
  listings_ = std::move(now);
  since_.clear();
  first_.clear();
  for (const auto& [pid, l] : listings_) {
    since_.emplace(pid, l.since);
    if (l.first_process) first_.emplace(pid, *l.first_process);
  }
  return since_;
}

}  // namespace gpureap::engine
