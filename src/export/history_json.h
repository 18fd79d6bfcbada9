#pragma once
// The `gpureap.history/v1` document of /api/v1/history, and the parsing of its `since`.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"
#include "history/series.h"

namespace gpureap::exporter {

inline constexpr const char* kHistorySchema = "gpureap.history/v1";

// Times are Unix seconds (with milliseconds), like Prometheus's API; unknown values are null.
nlohmann::json history_to_json(const history::HistoryView& view, const std::string& hostname,
                               history::TimePoint since);

// `since` of a history request: a duration ago ("90s", "10m", "1h"), a Unix time in seconds
// ("1700000000" or with decimals), or an RFC 3339 UTC time ("2024-05-01T12:00:00Z").
core::Result<history::TimePoint> parse_since(std::string_view text, history::TimePoint now);

}  // namespace gpureap::exporter
