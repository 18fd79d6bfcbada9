#include "export/history_since.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>

#include "core/duration.h"
#include "text/escape.h"
#include "text/rfc3339.h"

namespace gpureap::exporter {
namespace {

core::Error since_error(std::string_view text) {
  return {"cannot read since=\"" + text::utf8_valid(text) + "\"",
          "write a duration ago (10m, 1h), a Unix time in seconds, or an RFC 3339 time "
          "(2024-05-01T12:00:00Z)"};
}

}  // namespace

core::Result<history::TimePoint> parse_since(std::string_view text, history::TimePoint now) {
  if (text.empty()) return since_error(text);
  if (auto t = text::parse_rfc3339(text)) return *t;
  if (text.find('T') != std::string_view::npos && text.find('-') != std::string_view::npos)
    return since_error(text);  // meant as a time, but not one
  if (std::isalpha(static_cast<unsigned char>(text.back()))) {
    auto ago = core::parse_duration(text);
    if (!ago) return since_error(text);
    return now - std::chrono::duration_cast<history::TimePoint::duration>(*ago);
  }
  double secs = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), secs);
  // A TimePoint counts nanoseconds in 64 bits: a time after 2262 does not fit in one.
  constexpr double kMaxSeconds = static_cast<double>(
      std::chrono::duration_cast<std::chrono::seconds>(history::TimePoint::duration::max())
          .count());
  if (ec != std::errc() || ptr != text.data() + text.size() || secs < 0 || !std::isfinite(secs) ||
      secs > kMaxSeconds)
    return since_error(text);
  return history::TimePoint(
      std::chrono::milliseconds(static_cast<long long>(std::llround(secs * 1000))));
}

}  // namespace gpureap::exporter
