#pragma once
// Parsing of `gpureap kill`'s signals ("TERM", "SIGINT", "9"); durations are core/duration.h.
// Pure, so every odd spelling is unit-tested.
#include <chrono>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpureap::reap {

// "TERM", "SIGTERM", "sigterm", "15": a signal number that may be sent (1..SIGRTMAX).
core::Result<int> parse_signal(std::string_view text);

// "SIGTERM" for 15; "SIGRTMIN+3" for real-time signals; "signal N" when unnamed.
std::string signal_name(int signal);

}  // namespace gpureap::reap
