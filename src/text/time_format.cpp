#include "text/time_format.h"

#include <fmt/format.h>

#include <ctime>

namespace gpureap::text {
namespace {

// Both local spellings come from here, so they always agree on the time zone and the clock.
std::string local_strftime(std::chrono::system_clock::time_point t, const char* format) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  char buf[32];
  if (std::strftime(buf, sizeof buf, format, &tm) == 0) return {};
  return buf;
}

}  // namespace

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

std::string human_age(std::chrono::system_clock::duration d) {
  long long s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 0) s = 0;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m", s / 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d{}h", s / 86400, (s % 86400) / 3600);
}

std::string local_clock(std::chrono::system_clock::time_point t) {
  return local_strftime(t, "%H:%M:%S");
}

std::string local_date_time(std::chrono::system_clock::time_point t) {
  return local_strftime(t, "%Y-%m-%d %H:%M:%S");
}

}  // namespace gpureap::text
