#pragma once
// Memory sizes as the tests write them (16 * kGiB), one definition for every unit test file:
// they compile together in unity batches.
#include <cstdint>

namespace gpureap::testing {

inline constexpr std::uint64_t kKiB = std::uint64_t{1} << 10;
inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

}  // namespace gpureap::testing
