#pragma once
// The `since` of a history request (/api/v1/history, the local socket's "history"); the
// document it answers with is history/history_document's.
#include <string>
#include <string_view>

#include "core/result.h"
#include "history/series.h"

namespace gpureap::exporter {

// `since` of a history request: a duration ago ("90s", "10m", "1h"), a Unix time in seconds
// ("1700000000" or with decimals), or an RFC 3339 UTC time ("2024-05-01T12:00:00Z").
core::Result<history::TimePoint> parse_since(std::string_view text, history::TimePoint now);

}  // namespace gpureap::exporter
