#pragma once
// Counts in messages: "1 GPU", "2 GPUs", "3 policies".
#include <cstddef>
#include <string>
#include <string_view>

namespace gpureap::text {

// `n` and the noun, plural unless n is 1 ("process" → "processes", "policy" → "policies").
std::string plural(size_t n, std::string_view noun);

}  // namespace gpureap::text
