#include "daemon/holder_book_recent_forks.h"

#include <iterator>
#include <unordered_set>

namespace gpureap::daemon {

std::optional<RecentForks::Fork> RecentForks::add(pid_t child, pid_t parent, Clock::time_point now,
                                                  Clock::duration window, size_t kept) {
  handed_out(child);  // the caller says so first; a record left would name another process
  expire(now, window);
  records_.push_back({{child, parent, now}, next_seq_++, false});
  by_child_[child] = std::prev(records_.end());
  ++parents_[parent].records;
  if (records_.size() <= kept) return std::nullopt;
  const Fork oldest = records_.front().fork;
  remove(records_.begin());
  return oldest;
}

void RecentForks::exited(pid_t pid) {
  if (auto it = by_child_.find(pid); it != by_child_.end()) it->second->child_exited = true;
  if (auto it = parents_.find(pid); it != parents_.end()) it->second.exited_before = next_seq_;
}

void RecentForks::handed_out(pid_t pid) {
  if (auto it = by_child_.find(pid); it != by_child_.end()) remove(it->second);
  if (auto it = parents_.find(pid); it != parents_.end()) it->second.handed_out_before = next_seq_;
}

std::vector<RecentForks::Fork> RecentForks::claim(pid_t opener,
                                                  const std::function<bool(pid_t)>& holds,
                                                  Clock::time_point now, Clock::duration window) {
  expire(now, window);
  std::vector<Fork> out;
  std::unordered_set<pid_t> reached;  // children this claim reached, in its order
  // Parents come before their children in the records, so one pass finds grandchildren too.
  for (auto it = records_.begin(); it != records_.end();) {
    const Fork f = it->fork;
    const Parent& parent = parents_.at(f.parent);
    if (it->seq < parent.handed_out_before) {  // its parent's number is another process's now
      it = remove(it);
      continue;
    }
    const bool parent_exited = it->seq < parent.exited_before;
    const bool parent_holds =
        reached.count(f.parent) > 0 || (parent_exited ? f.parent == opener : holds(f.parent));
    if (!parent_holds) {
      ++it;
      continue;
    }
    reached.insert(f.child);
    if (!it->child_exited) out.push_back(f);
    it = remove(it);
  }
  return out;
}

void RecentForks::clear() {
  records_.clear();
  by_child_.clear();
  parents_.clear();
}

RecentForks::Records::iterator RecentForks::remove(Records::iterator it) {
  if (auto c = by_child_.find(it->fork.child); c != by_child_.end() && c->second == it)
    by_child_.erase(c);
  if (auto p = parents_.find(it->fork.parent); p != parents_.end() && --p->second.records == 0)
    parents_.erase(p);
  return records_.erase(it);
}

void RecentForks::expire(Clock::time_point now, Clock::duration window) {
  while (!records_.empty() && now - records_.front().fork.at > window) remove(records_.begin());
}

}  // namespace gpureap::daemon
