#pragma once
#include <chrono>
#include <string>

namespace gpureap::output {

// ISO-8601 UTC with milliseconds: 2026-11-30T07:53:57.123Z
std::string iso8601_utc(std::chrono::system_clock::time_point t);
// A short human age: 45s, 12m, 2h13m, 3d4h.
std::string human_age(std::chrono::system_clock::duration d);
// Binary units for tables: 8.0 GiB, 512 MiB, 12 KiB.
std::string human_bytes(uint64_t bytes);    // "8.0 GiB", "80 GiB"
std::string compact_bytes(uint64_t bytes);  // the same figure for narrow columns: "8.0G", "80G"

}  // namespace gpureap::output
