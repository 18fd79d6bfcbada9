#pragma once
// Blocking socket I/O with one deadline for the whole exchange: a peer that trickles or stalls
// costs at most the time left, never a hang (the daemon's local socket, a daemon's HTTP port).
#include <chrono>
#include <string_view>

namespace gpureap::base {

using DeadlineClock = std::chrono::steady_clock;

// Waits for `events` (poll(2)) on `fd` until `deadline`; false when it passed or poll failed.
bool wait_for(int fd, short events, DeadlineClock::time_point deadline);
// All of `text` to a socket that may be non-blocking; false on an error or past `deadline`.
bool send_all(int fd, std::string_view text, DeadlineClock::time_point deadline);

}  // namespace gpureap::base
