#include "core/listed_sightings.h"

#include <set>
#include <string>

#include "core/pid_space.h"

namespace gpureap::core {

std::map<pid_t, ListedSightings::Fork> forks_of(const ProcView& view) {
  std::map<pid_t, ListedSightings::Fork> forks;
  for (const auto& [child, parent] : view.exited_parents)
    if (const HostProcess* p = view.find(child))
      forks.emplace(child, ListedSightings::Fork{parent, p->stat.start_ticks});
  return forks;
}

ListedSightings sightings_of(const ProcView& view) {
  return {view.boot_time, view.pid_namespace, view.listed_since, view.listed_first_process,
          view.ends,      forks_of(view)};
}

std::optional<std::string> sightings_mismatch(const ListedSightings& sightings,
                                              const ProcView& view) {
  return pid_space_mismatch({sightings.boot_time, sightings.pid_namespace}, pid_space_of(view));
}

void adopt_sightings(ProcView& view, const DriverReading& drivers,
                     const ListedSightings& sightings) {
  if (sightings_mismatch(sightings, view)) return;
  std::set<pid_t> listed;
  for (const auto& g : drivers.gpus)
    for (const auto& p : g.processes) listed.insert(p.pid);
  for (pid_t pid : listed) {
    if (auto it = sightings.since.find(pid); it != sightings.since.end())
      view.listed_since.try_emplace(pid, it->second);
    if (auto it = sightings.first_process.find(pid); it != sightings.first_process.end())
      view.listed_first_process.try_emplace(pid, it->second);
    if (auto it = sightings.ends.find(pid); it != sightings.ends.end())
      view.ends.try_emplace(pid, it->second);
  }
  for (const auto& [child, fork] : sightings.forks) {
    const HostProcess* p = view.find(child);
    if (listed.count(fork.parent) && p && p->stat.start_ticks == fork.child_start)
      view.exited_parents.try_emplace(child, fork.parent);
  }
}

}  // namespace gpureap::core
