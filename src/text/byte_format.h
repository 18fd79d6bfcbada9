#pragma once
// Amounts of memory for people: binary units and one rounding rule (below 10 of a unit one
// decimal, from 10 on none), so a table, `top`'s header and a finding never disagree about
// the same figure. Exact byte counts belong in JSON and metrics, not here.
#include <cstdint>
#include <string>

namespace gpureap::text {

std::string human_bytes(uint64_t bytes);    // "8.0 GiB", "80 GiB", "512 B"
std::string compact_bytes(uint64_t bytes);  // the same figure for narrow columns: "8.0G", "80G"

}  // namespace gpureap::text
