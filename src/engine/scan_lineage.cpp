#include "engine/scan_lineage.h"

#include <algorithm>

namespace gpureap::engine {
namespace {

// As many as the events mode keeps (daemon/holder_tracker): the latest few lives of a number,
// for a bounded set of numbers.
constexpr size_t kEndsPerPid = 4;
constexpr size_t kKeptEnds = 4096;

}  // namespace

void ScanLineage::observe(const core::ProcView& view, uint64_t now_ticks) {
  auto find = [&](pid_t pid) { return view.find(pid); };
  // Which of the watched processes ended since the last view.
  std::vector<pid_t> ended;
  for (const auto& [pid, seen] : watched_) {
    const core::HostProcess* now = find(pid);
    if (now && now->stat.start_ticks == seen.start_ticks && now->is_live()) continue;
    uint64_t end = now_ticks;
    if (now && now->stat.start_ticks != seen.start_ticks)
      end = std::min(end, now->stat.start_ticks);
    note_end(pid, {seen.start_ticks, end, seen.holder});
    ended.push_back(pid);
  }
  // A holder still there, the same process, whose parent ended: reparented.
  for (const auto& [pid, seen] : watched_) {
    if (!seen.holder || !std::binary_search(ended.begin(), ended.end(), seen.ppid)) continue;
    const core::HostProcess* now = find(pid);
    if (now && now->stat.start_ticks == seen.start_ticks && now->is_live())
      exited_parents_[pid] = seen.ppid;
  }
  // A child that ended is no one's reparented child any more; its number may be handed out.
  for (pid_t pid : ended) exited_parents_.erase(pid);

  watched_.clear();
  for (const auto& p : view.processes) {
    if (!p.holds_device() || !p.is_live()) continue;
    watched_[p.stat.pid] = {p.stat.start_ticks, p.stat.ppid, true};
    const core::HostProcess* parent = find(p.stat.ppid);
    // The parent it has now: started before it, so it is the process that forked it (or the
    // reaper it was handed to, which is no gone job's).
    if (parent && parent->is_live() && parent->stat.start_ticks <= p.stat.start_ticks)
      watched_.try_emplace(parent->stat.pid, Seen{parent->stat.start_ticks, parent->stat.ppid});
  }
}

void ScanLineage::note_end(pid_t pid, const core::ProcessEnd& life) {
  auto& lives = ends_[pid];
  if (!lives.empty() && lives.back().start_ticks == life.start_ticks) return;  // known already
  if (lives.empty()) end_order_.push_back(pid);
  lives.push_back(life);
  if (lives.size() > kEndsPerPid) lives.erase(lives.begin());
  while (end_order_.size() > kKeptEnds) {
    ends_.erase(end_order_.front());
    end_order_.pop_front();
  }
}

}  // namespace gpureap::engine
