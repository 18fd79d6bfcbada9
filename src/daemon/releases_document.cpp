#include "daemon/releases_document.h"

#include "export/history_json.h"
#include "text/time_format.h"

namespace gpureap::daemon {

nlohmann::json releases_json(const HolderTracker* tracker,
                             std::chrono::system_clock::time_point since) {
  nlohmann::json list = nlohmann::json::array();
  if (tracker)
    for (const auto& r : tracker->releases())
      if (r.at >= since)
        list.push_back({{"path", r.path}, {"pid", r.pid}, {"at", text::iso8601_utc(r.at)}});
  return list;
}

nlohmann::json releases_document(const HolderTracker* tracker) {
  return {{"schema", kReleasesSchema},
          {"tracking", tracker ? "events" : "scans"},
          {"releases", releases_json(tracker)}};
}

nlohmann::json history_document(const history::History& history, const std::string& hostname,
                                std::chrono::system_clock::time_point since,
                                std::optional<unsigned> gpu, const HolderTracker* tracker) {
  auto doc = exporter::history_to_json(history.query({gpu, since}), hostname, since);
  // The moments drivers freed what a GPU file held, over the same span (holder events).
  doc["releases"] = releases_json(tracker, since);
  return doc;
}

}  // namespace gpureap::daemon
