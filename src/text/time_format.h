#pragma once
// Times and ages as people and logs read them. One spelling per use, so every view (tables,
// `top`, `ps --watch`, the audit log, alerts) writes a time the same way.
#include <chrono>
#include <string>

namespace gpureap::text {

// ISO-8601 UTC with milliseconds: 2026-11-30T07:53:57.123Z
std::string iso8601_utc(std::chrono::system_clock::time_point t);
// A short human age: 45s, 12m, 2h13m, 3d4h.
std::string human_age(std::chrono::system_clock::duration d);
// The local time of day, for a status line that is read at once: "14:03:27".
std::string local_clock(std::chrono::system_clock::time_point t);
// The local date and time, for a screen that may be read later (`ps --watch`, as watch(1)):
// "2026-12-01 14:03:27".
std::string local_date_time(std::chrono::system_clock::time_point t);

}  // namespace gpureap::text
