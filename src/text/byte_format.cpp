#include "text/byte_format.h"

#include <fmt/format.h>

#include <utility>

namespace gpureap::text {
namespace {

std::pair<double, int> scaled(uint64_t b) {
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return {v, u};
}

std::string rounded(double v) {
  return v < 10 ? fmt::format("{:.1f}", v) : fmt::format("{:.0f}", v);
}

}  // namespace

std::string human_bytes(uint64_t b) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  auto [v, u] = scaled(b);
  if (u == 0) return fmt::format("{} B", b);
  return rounded(v) + " " + kUnits[u];
}

std::string compact_bytes(uint64_t b) {
  constexpr const char* kUnits[] = {"B", "K", "M", "G", "T", "P"};
  auto [v, u] = scaled(b);
  if (u == 0) return fmt::format("{}B", b);
  return rounded(v) + kUnits[u];
}

}  // namespace gpureap::text
