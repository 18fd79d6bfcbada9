#pragma once
// Reading back the times the audit log writes (text::iso8601_utc) and the ones users type
// after `--since`: RFC 3339, "2026-11-30T07:53:57.123Z" or with a numeric offset.
#include <chrono>
#include <optional>
#include <string_view>

namespace gpureap::text {

// Date, 'T' (or 't' or a space), time with optional fraction, then 'Z' or ±HH:MM. Anything
// else, or a field out of range, is nullopt. Fractions below a millisecond are dropped.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text);

}  // namespace gpureap::text
