#pragma once
// Parsing of `gpureap kill`'s values: durations ("500ms", "10s", "1m") and signals ("TERM",
// "SIGINT", "9"). Pure, so every odd spelling is unit-tested.
#include <chrono>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpureap::reap {

// "500ms", "10s", "1.5s", "1m", "2h"; a bare number is seconds. Negative or garbage is an error.
core::Result<std::chrono::milliseconds> parse_duration(std::string_view text);

// "TERM", "SIGTERM", "sigterm", "15": a signal number that may be sent (1..SIGRTMAX).
core::Result<int> parse_signal(std::string_view text);

// "SIGTERM" for 15; "SIGRTMIN+3" for real-time signals; "signal N" when unnamed.
std::string signal_name(int signal);

}  // namespace gpureap::reap
