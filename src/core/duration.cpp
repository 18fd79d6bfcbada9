#include "core/duration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace gpureap::core {
namespace {

constexpr double kMaxMs = 366.0 * 86'400'000.0;

core::Error bad_duration(std::string_view text) {
  return {"invalid duration \"" + std::string(text) + "\"",
          "write a number with a unit: 500ms, 30s, 5m, 1h, 2d (only 0 needs none)"};
}

}  // namespace

core::Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  size_t unit_at = 0;
  while (unit_at < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[unit_at])) || text[unit_at] == '.'))
    ++unit_at;
  std::string_view number = text.substr(0, unit_at), unit = text.substr(unit_at);
  if (number.empty() || number.front() == '.' || number.back() == '.' ||
      std::count(number.begin(), number.end(), '.') > 1)
    return bad_duration(text);
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size()) return bad_duration(text);
  double scale = 0;
  if (unit == "ms")
    scale = 1;
  else if (unit == "s" || (unit.empty() && value == 0))
    scale = 1000;
  else if (unit == "m" || unit == "min")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  else if (unit == "d")
    scale = 86'400'000;
  else
    return bad_duration(text);
  double ms = value * scale;
  if (!std::isfinite(ms) || ms > kMaxMs) return bad_duration(text);
  return std::chrono::milliseconds(static_cast<long long>(std::llround(ms)));
}

std::string format_duration(std::chrono::milliseconds d) {
  long long ms = std::max<long long>(0, d.count());
  if (ms < 1000) return fmt::format("{}ms", ms);
  if (ms < 60'000) {
    // Tenths are exact enough below a minute; whole seconds print without ".0".
    if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
    return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0);
  }
  long long s = ms / 1000;
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d{}h", s / 86400, (s % 86400) / 3600);
}

double seconds(std::chrono::milliseconds d) {
  return static_cast<double>(d.count()) / 1000.0;
}

}  // namespace gpureap::core
