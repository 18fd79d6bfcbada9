#include "supervise/job_tree.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "procfs/resource_shortage.h"

namespace gpureap::supervise {

std::vector<core::ProcessStat> descendants_of(pid_t root,
                                              const std::vector<core::ProcessStat>& all) {
  std::unordered_map<pid_t, const core::ProcessStat*> by_pid;
  by_pid.reserve(all.size());
  for (const auto& st : all) by_pid[st.pid] = &st;
  // A link to a parent read with a reused number is no link: through it a stranger would
  // descend from the job (core::could_be_parent).
  std::unordered_map<pid_t, pid_t> parent;
  parent.reserve(all.size());
  for (const auto& st : all) {
    auto it = by_pid.find(st.ppid);
    if (it == by_pid.end() || core::could_be_parent(*it->second, st)) parent[st.pid] = st.ppid;
  }
  // Memoised walk up the parent chain; a chain that loops (a torn read) counts as outside.
  std::unordered_map<pid_t, bool> inside;
  auto walk = [&](pid_t pid) {
    std::vector<pid_t> path;
    std::unordered_set<pid_t> seen;
    bool verdict = false;
    pid_t p = pid;
    for (;;) {
      auto known = inside.find(p);
      if (known != inside.end()) {
        verdict = known->second;
        break;
      }
      auto it = parent.find(p);
      if (it == parent.end() || it->second <= 0 || !seen.insert(p).second) break;
      path.push_back(p);
      if (it->second == root) {
        verdict = true;
        break;
      }
      p = it->second;
    }
    for (pid_t q : path) inside[q] = verdict;
    return verdict;
  };
  std::vector<core::ProcessStat> out;
  for (const auto& st : all)
    if (st.pid != root && walk(st.pid)) out.push_back(st);
  return out;
}

bool is_alive(const core::ProcessStat& st) {
  return st.state != 'Z' && st.state != 'X' && st.state != 'x';
}

core::Result<std::vector<core::ProcessStat>> read_all_stats(const procfs::ProcFs& proc) {
  std::vector<core::ProcessStat> out;
  auto pids = proc.list_pids();
  if (!pids) return pids.error();
  for (pid_t pid : *pids) {
    auto st = proc.read_stat(pid);
    if (!st && procfs::is_resource_shortage(st.error().code)) return st.error();
    if (st && *st) out.push_back(std::move(**st));
  }
  return out;
}

void JobMembers::add(const core::ProcessStat& st) {
  std::lock_guard lock(mutex_);
  add_locked(st);
}

void JobMembers::add_locked(const core::ProcessStat& st) {
  auto it = std::lower_bound(members_.begin(), members_.end(), st.pid,
                             [](const JobMember& m, pid_t pid) { return m.pid < pid; });
  for (auto j = it; j != members_.end() && j->pid == st.pid; ++j)
    if (j->start_ticks == st.start_ticks) return;
  members_.insert(it, JobMember{st.pid, st.start_ticks, st.comm});
}

std::vector<core::ProcessStat> JobMembers::observe(const std::vector<core::ProcessStat>& all) {
  auto found = descendants_of(root_, all);
  std::lock_guard lock(mutex_);
  for (const auto& st : found) add_locked(st);
  std::vector<core::ProcessStat> live;
  for (const auto& st : all) {
    if (!is_alive(st)) continue;
    auto it = std::lower_bound(members_.begin(), members_.end(), st.pid,
                               [](const JobMember& m, pid_t pid) { return m.pid < pid; });
    for (; it != members_.end() && it->pid == st.pid; ++it)
      if (it->start_ticks == st.start_ticks) {
        live.push_back(st);
        break;
      }
  }
  return live;
}

bool JobMembers::contains(pid_t pid, std::optional<uint64_t> start_ticks) const {
  std::lock_guard lock(mutex_);
  auto it = std::lower_bound(members_.begin(), members_.end(), pid,
                             [](const JobMember& m, pid_t p) { return m.pid < p; });
  for (; it != members_.end() && it->pid == pid; ++it)
    if (!start_ticks || it->start_ticks == *start_ticks) return true;
  return false;
}

std::vector<JobMember> JobMembers::all() const {
  std::lock_guard lock(mutex_);
  return members_;
}

}  // namespace gpureap::supervise
