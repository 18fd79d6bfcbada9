#pragma once
// Durations for options and config keys ("500ms", "30s", "5m", "1h", "2d") and their human
// spelling in summaries. One parser for every option and config key; a job's --timeout is
// legitimately days long.
#include <chrono>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpureap::core {

// A number (decimals allowed) with a unit ms, s, m (or min), h or d. The unit is required
// ("5" could mean seconds or milliseconds), except for a plain 0.
// Negative, garbage, or more than 366 days is an error that says how to write it.
core::Result<std::chrono::milliseconds> parse_duration(std::string_view text);

// "250ms", "1.5s", "2m03s", "1h02m", "3d4h": short and exact enough for a summary line.
std::string format_duration(std::chrono::milliseconds d);

// Seconds as a JSON number with millisecond precision.
double seconds(std::chrono::milliseconds d);

}  // namespace gpureap::core
