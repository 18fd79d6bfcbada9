#include "reap/kin.h"

#include <algorithm>
#include <deque>
#include <set>

namespace gpureap::reap {

Kin::Kin(const core::Snapshot& snapshot) : snapshot_(snapshot) {
  // A parent read with a number reused since is no parent (core::could_be_parent): through it
  // --tree would reach a stranger.
  for (const auto& p : snapshot_.proc.processes) {
    if (p.stat.ppid == p.stat.pid) continue;
    const core::HostProcess* parent = snapshot_.find(p.stat.ppid);
    if (!parent || core::could_be_parent(parent->stat, p.stat))
      children_[p.stat.ppid].push_back(p.stat.pid);
  }
}

std::vector<pid_t> Kin::descendants(pid_t pid) const {
  std::vector<pid_t> out;
  std::set<pid_t> seen{pid};
  std::deque<pid_t> queue{pid};
  while (!queue.empty()) {
    auto it = children_.find(queue.front());
    queue.pop_front();
    if (it == children_.end()) continue;
    for (pid_t c : it->second) {
      if (!seen.insert(c).second) continue;  // a corrupt view could loop
      out.push_back(c);
      queue.push_back(c);
    }
  }
  return out;
}

bool Kin::descends_from(const core::HostProcess& p, pid_t ancestor) const {
  const core::HostProcess* cur = &p;
  for (int depth = 0; cur && depth < 4096; ++depth) {
    const core::HostProcess* parent = snapshot_.find(cur->stat.ppid);
    if (parent && !core::could_be_parent(parent->stat, cur->stat)) return false;
    if (cur->stat.ppid == ancestor) return true;
    if (cur->stat.ppid <= 1) return false;
    cur = parent;
  }
  return false;
}

std::vector<pid_t> Kin::group_members(pid_t pgid) const {
  std::vector<pid_t> out;
  for (const auto& p : snapshot_.proc.processes)
    if (p.stat.pgid == pgid) out.push_back(p.stat.pid);
  return out;
}

bool Kin::is_gone(pid_t pid) const {
  // A listed number another process has now is gone: the row says so, not /proc.
  if (const core::ProcessRow* r = snapshot_.row(pid); r && r->listed_by_driver && !r->process)
    return true;
  const core::HostProcess* p = snapshot_.find(pid);
  return !p || p->stat.is_zombie();
}

// The snapshot's ghost verdict decides: keepers share no open file with a live listed process.
std::vector<pid_t> Kin::keepers(pid_t pid) const {
  const core::Ghost* g = snapshot_.ghost(pid);
  if (!g) return {};
  std::vector<pid_t> out = g->keepers;
  out.insert(out.end(), g->listed_keepers.begin(), g->listed_keepers.end());
  return out;
}

std::vector<pid_t> Kin::other_holders(pid_t pid) const {
  const core::Ghost* g = snapshot_.ghost(pid);
  return g ? g->other_holders : std::vector<pid_t>{};
}

}  // namespace gpureap::reap
