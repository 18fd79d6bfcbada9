#include "daemon/releases_document.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "history/history_document.h"
#include "procfs/proc_fs.h"

namespace gpureap::daemon {

std::vector<unsigned> gpus_reached(const std::string& path, const core::DriverReading& drivers) {
  struct stat st {};
  std::vector<unsigned> out;
  if (::stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return out;
  for (const auto& g : drivers.gpus)
    if (std::find(g.device_numbers.begin(), g.device_numbers.end(), st.st_rdev) !=
        g.device_numbers.end())
      out.push_back(g.index);
  return out;
}

std::vector<history::Release> releases(const HolderTracker* tracker,
                                       std::chrono::system_clock::time_point since,
                                       const core::DriverReading* drivers) {
  std::vector<history::Release> out;
  if (!tracker) return out;
  std::map<std::string, std::vector<unsigned>> reached;  // a few watched paths, many releases
  for (const auto& r : tracker->releases()) {
    if (r.at < since) continue;
    history::Release one{r.path, r.pid, r.at, std::nullopt};
    if (drivers) {
      auto [it, fresh] = reached.try_emplace(r.path);
      if (fresh) it->second = gpus_reached(r.path, *drivers);
      one.gpus = it->second;
    }
    out.push_back(std::move(one));
  }
  return out;
}

nlohmann::json releases_document(const HolderTracker* tracker) {
  // The events name PIDs of the daemon's own namespace (the kernel's /proc/self, whatever
  // --proc-root the daemon reads), which a process's own never changes.
  static const std::optional<uint64_t> pid_namespace = [] {
    auto proc = procfs::ProcFs::open("/proc");
    return proc ? proc->pid_namespace() : std::nullopt;
  }();
  return {{"schema", kReleasesSchema},
          {"tracking", tracker ? "events" : "scans"},
          {"pid_namespace", pid_namespace ? nlohmann::json(*pid_namespace) : nlohmann::json()},
          {"releases", history::releases_to_json(releases(tracker))}};
}

nlohmann::json history_document(const history::History& history, const core::Snapshot& now,
                                std::chrono::system_clock::time_point since,
                                std::optional<unsigned> gpu, const HolderTracker* tracker) {
  // With the moments drivers freed what a GPU file held, over the same span (holder events),
  // each with the GPUs its file reaches: the page draws it on those.
  return history::history_to_json(
      {now.hostname, since, history.query({gpu, since}), releases(tracker, since, &now.drivers)});
}

}  // namespace gpureap::daemon
