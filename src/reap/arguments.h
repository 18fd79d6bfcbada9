#pragma once
// Parsing of `gpureap kill`'s signals ("TERM", "SIGINT", "9"); durations are core/duration.h.
// Pure, so every odd spelling is unit-tested.
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpureap::reap {

// "TERM", "SIGTERM", "sigterm", "15": a signal number that may be sent (1..SIGRTMAX).
core::Result<int> parse_signal(std::string_view text);

// "SIGTERM" for 15; "SIGRTMIN+3" for real-time signals; "signal N" when unnamed.
std::string signal_name(int signal);

// The names parse_signal knows, without "SIG", in number order ("HUP", ..., "SYS"): what
// shell completion offers for `kill --signal`.
std::vector<std::string> signal_names();

}  // namespace gpureap::reap
