#include "engine/known_ends.h"

#include <algorithm>

namespace gpureap::engine {
namespace {

constexpr size_t kLivesPerPid = 4;  // as many as the tracker and ScanLineage keep

}  // namespace

void merge_ends(Ends& into, const Ends& from) {
  for (const auto& [pid, lives] : from) {
    auto& mine = into[pid];
    for (const auto& life : lives)
      if (std::none_of(mine.begin(), mine.end(),
                       [&](const auto& m) { return m.start_ticks == life.start_ticks; }))
        mine.push_back(life);
    std::sort(mine.begin(), mine.end(),
              [](const auto& a, const auto& b) { return a.start_ticks < b.start_ticks; });
    if (mine.size() > kLivesPerPid) mine.erase(mine.begin(), mine.end() - kLivesPerPid);
  }
}

void merge_exited_parents(std::map<pid_t, pid_t>& into, const std::map<pid_t, pid_t>& from) {
  for (const auto& [child, parent] : from) into.try_emplace(child, parent);
}

void ListedEnds::keep(Ends& ends, const std::map<pid_t, uint64_t>& listed) {
  std::erase_if(kept_, [&](const auto& kv) { return !listed.count(kv.first); });
  for (const auto& [pid, since] : listed)
    if (auto it = ends.find(pid); it != ends.end()) merge_ends(kept_, {{pid, it->second}});
  merge_ends(ends, kept_);
}

}  // namespace gpureap::engine
