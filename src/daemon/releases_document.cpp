#include "daemon/releases_document.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "export/history_json.h"
#include "text/time_format.h"

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

nlohmann::json releases_json(const HolderTracker* tracker,
                             std::chrono::system_clock::time_point since,
                             const core::DriverReading* drivers) {
  nlohmann::json list = nlohmann::json::array();
  if (!tracker) return list;
  std::map<std::string, std::vector<unsigned>> reached;  // a few watched paths, many releases
  for (const auto& r : tracker->releases()) {
    if (r.at < since) continue;
    nlohmann::json one = {{"path", r.path}, {"pid", r.pid}, {"at", text::iso8601_utc(r.at)}};
    if (drivers) {
      auto [it, fresh] = reached.try_emplace(r.path);
      if (fresh) it->second = gpus_reached(r.path, *drivers);
      one["gpus"] = it->second;
    }
    list.push_back(std::move(one));
  }
  return list;
}

nlohmann::json releases_document(const HolderTracker* tracker) {
  return {{"schema", kReleasesSchema},
          {"tracking", tracker ? "events" : "scans"},
          {"releases", releases_json(tracker)}};
}

nlohmann::json history_document(const history::History& history, const core::Snapshot& now,
                                std::chrono::system_clock::time_point since,
                                std::optional<unsigned> gpu, const HolderTracker* tracker) {
  auto doc = exporter::history_to_json(history.query({gpu, since}), now.hostname, since);
  // The moments drivers freed what a GPU file held, over the same span (holder events), each
  // with the GPUs its file reaches: the page draws it on those.
  doc["releases"] = releases_json(tracker, since, &now.drivers);
  return doc;
}

}  // namespace gpureap::daemon
