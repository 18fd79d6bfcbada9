#include "text/rfc3339.h"

#include <charconv>
#include <ctime>

namespace gpureap::text {
namespace {

// Exactly `digits` decimal digits at text[pos], advancing pos.
std::optional<int> fixed_number(std::string_view text, size_t& pos, size_t digits) {
  if (pos + digits > text.size()) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data() + pos, text.data() + pos + digits, value);
  if (ec != std::errc() || end != text.data() + pos + digits) return std::nullopt;
  pos += digits;
  return value;
}

bool expect(std::string_view text, size_t& pos, std::string_view chars) {
  if (pos >= text.size() || chars.find(text[pos]) == std::string_view::npos) return false;
  ++pos;
  return true;
}

bool leap_year(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int days_in_month(int y, int m) {
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap_year(y) ? 29 : kDays[m - 1];
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text) {
  size_t pos = 0;
  auto year = fixed_number(text, pos, 4);
  if (!year || !expect(text, pos, "-")) return std::nullopt;
  auto month = fixed_number(text, pos, 2);
  if (!month || !expect(text, pos, "-")) return std::nullopt;
  auto day = fixed_number(text, pos, 2);
  if (!day || !expect(text, pos, "Tt ")) return std::nullopt;
  auto hour = fixed_number(text, pos, 2);
  if (!hour || !expect(text, pos, ":")) return std::nullopt;
  auto minute = fixed_number(text, pos, 2);
  if (!minute || !expect(text, pos, ":")) return std::nullopt;
  auto second = fixed_number(text, pos, 2);
  if (!second) return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > days_in_month(*year, *month) || *hour > 23 ||
      *minute > 59 || *second > 60)  // 60: a leap second, as RFC 3339 allows
    return std::nullopt;

  long long millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t digits = 0;
    long long scale = 100;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      millis += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
  }

  long long offset_minutes = 0;
  if (expect(text, pos, "Zz")) {
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int sign = text[pos++] == '-' ? -1 : 1;
    auto oh = fixed_number(text, pos, 2);
    if (!oh || !expect(text, pos, ":")) return std::nullopt;
    auto om = fixed_number(text, pos, 2);
    if (!om || *oh > 23 || *om > 59) return std::nullopt;
    offset_minutes = sign * (static_cast<long long>(*oh) * 60 + *om);
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;

  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  std::time_t utc = ::timegm(&tm);
  using namespace std::chrono;
  const milliseconds since_epoch = seconds(utc) - minutes(offset_minutes) + milliseconds(millis);
  // The clock counts nanoseconds in 64 bits: years before 1678 or after 2261 do not fit.
  constexpr milliseconds kLimit = duration_cast<milliseconds>(system_clock::duration::max());
  if (since_epoch > kLimit || since_epoch < -kLimit) return std::nullopt;
  return system_clock::time_point(since_epoch);
}

}  // namespace gpureap::text
