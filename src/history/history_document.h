#pragma once
// The `gpureap.history/v1` document of /api/v1/history, written and read in this one place: the
// daemon (through export and the local socket) writes it, `gpureap report` and `gpureap kill`
// read it back. A field added to a struct it carries stops the build here (field counts) until
// it is encoded and decoded; tests/unit/test_history_document.cpp round-trips every field.
//
// Times are Unix seconds (with milliseconds), like Prometheus's API; unknown values are null.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "history/series.h"

namespace gpureap::history {

inline constexpr const char* kHistorySchema = "gpureap.history/v1";

// A final close of a GPU file the daemon's holder events saw (the `releases` of the history).
struct Release {
  std::string path;
  pid_t pid = 0;  // the process that dropped the last reference
  TimePoint at;   // kept to the millisecond
  // The GPUs the file reaches, by its device number (none: the driver's control file); empty
  // from a daemon that did not say.
  std::optional<std::vector<unsigned>> gpus;
};

struct HistoryDocument {
  std::string hostname;
  TimePoint since;
  HistoryView view;
  std::vector<Release> releases;  // none from a daemon that follows no holder events
};

nlohmann::json history_to_json(const HistoryDocument& document);

// The document back, strictly: another schema, a missing or mistyped field is an error naming
// where it is (gpus[0].samples[3].time). Members it does not describe (the daemon's "incident")
// are the caller's. Fields older daemons did not write (keepers, memory_total_bytes, releases,
// a release's gpus) read as unknown.
core::Result<HistoryDocument> history_from_json(const nlohmann::json& document);

// A `releases` list alone ([{"path","pid","at","gpus"}]), as gpureap.releases/v1 carries it.
nlohmann::json releases_to_json(const std::vector<Release>& releases);
core::Result<std::vector<Release>> releases_from_json(const nlohmann::json& releases);

}  // namespace gpureap::history
