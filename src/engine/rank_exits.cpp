#include "engine/rank_exits.h"

#include <algorithm>

#include "core/distributed_job.h"

namespace gpureap::engine {
namespace {

// The events' record of that life of `pid`'s end, where they saw it.
const core::ProcessEnd* events_end(const core::ProcView& view, pid_t pid, uint64_t start_ticks) {
  auto it = view.ends.find(pid);
  if (it == view.ends.end()) return nullptr;
  for (const auto& life : it->second)
    if (life.start_ticks == start_ticks) return &life;
  return nullptr;
}

bool rank_lives(const core::ProcView& view, pid_t pid, uint64_t start_ticks) {
  const auto* p = view.find(pid);
  return p && p->is_live() && p->stat.start_ticks == start_ticks;
}

bool recorded(const std::vector<core::RankExit>& exits, pid_t pid, uint64_t start_ticks) {
  return std::any_of(exits.begin(), exits.end(), [&](const core::RankExit& e) {
    return e.pid == pid && e.start_ticks == start_ticks;
  });
}

}  // namespace

void RankExits::carry_over(std::vector<core::RankExit> exits,
                           const std::vector<core::CarriedSightings::WatchedRank>& watched) {
  exits_ = std::move(exits);
  for (const auto& w : watched) watched_[w.pid] = w;
}

std::vector<core::CarriedSightings::WatchedRank> RankExits::watched() const {
  std::vector<core::CarriedSightings::WatchedRank> out;
  for (const auto& [pid, w] : watched_) out.push_back(w);
  return out;
}

void RankExits::observe(const core::ProcView& view, uint64_t now_ticks,
                        const ReadStatus& read_status) {
  // A process a scan failed to read (out of descriptors or memory) is missing from the view as
  // an ended one is: unless the kernel's exit event says it ended, its absence from a view with
  // failures is no end. It is judged again on the next view.
  const bool complete = view.scan_failures.empty();
  auto lives = [&](pid_t pid, uint64_t start_ticks) {
    return rank_lives(view, pid, start_ticks) ||
           (!complete && !view.find(pid) && !events_end(view, pid, start_ticks));
  };
  for (const auto& [pid, w] : watched_) {
    if (lives(pid, w.start_ticks)) continue;
    const auto* now = view.find(pid);
    const bool zombie = now && now->stat.start_ticks == w.start_ticks && now->stat.is_zombie();
    core::RankExit e{w.launcher,    w.launcher_start_ticks, pid,
                     w.start_ticks, w.local_rank,           now_ticks,
                     std::nullopt};
    const core::ProcessEnd* seen = events_end(view, pid, w.start_ticks);
    if (seen) e.end_ticks = std::min(seen->end_ticks, now_ticks);
    // Only the kernel's exit event dates an end (its record carries the exit's status; one
    // learned from scans does not): otherwise the end is known only to lie before this view.
    e.end_upper_bound = !seen || !seen->wait_status;
    // Another process under the number started after this one ended.
    if (now && now->stat.start_ticks != w.start_ticks)
      e.end_ticks = std::min(e.end_ticks, now->stat.start_ticks);
    // The zombie's status is the process's; the event's is its last thread's, the same but
    // for a thread that exit()ed apart from the group.
    if (zombie && read_status) e.wait_status = read_status(pid);
    if (!e.wait_status && seen) e.wait_status = seen->wait_status;
    exits_.push_back(e);
  }
  // A launcher that ended took its job with it.
  std::erase_if(
      exits_, [&](const core::RankExit& e) { return !lives(e.launcher, e.launcher_start_ticks); });
  if (exits_.size() > kMaxKept) exits_.erase(exits_.begin(), exits_.end() - kMaxKept);

  // A rank that is ending may already lack what made it one (its environ and fds go before
  // it is a zombie): it stays watched, under the label it had, while it and its launcher live.
  std::map<pid_t, Watched> next;
  for (const auto& [pid, w] : watched_)
    if (lives(pid, w.start_ticks) && lives(w.launcher, w.launcher_start_ticks))
      next.emplace(pid, w);
  for (const auto& job : core::distributed_jobs(view))
    for (const auto& r : job.ranks) {
      const auto* p = view.find(r.pid);
      // A life whose end is recorded ended: a view that shows it live again is older news (a
      // stale read), and watching it anew would record the same end again, dated later.
      if (!p || recorded(exits_, r.pid, p->stat.start_ticks)) continue;
      Watched w{r.pid, p->stat.start_ticks, job.launcher, job.launcher_start_ticks, r.local_rank};
      if (auto old = next.find(r.pid); old != next.end() && !w.local_rank)
        w.local_rank = old->second.local_rank;
      next[r.pid] = w;
    }
  watched_ = std::move(next);
}

}  // namespace gpureap::engine
