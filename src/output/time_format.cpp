#include "output/time_format.h"

#include <fmt/format.h>

#include <ctime>

namespace gpureap::output {

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

namespace {

// One rounding rule for every view: below 10 of a unit one decimal, from 10 on none.
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

}  // namespace gpureap::output
