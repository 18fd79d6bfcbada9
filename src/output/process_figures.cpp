#include "output/process_figures.h"

#include <fmt/format.h>
#include <unistd.h>

#include "text/byte_format.h"

namespace gpureap::output {

ProcessFigures process_figures(const core::Snapshot& s, const core::HostProcess& p) {
  ProcessFigures f;
  if (p.stat.rss_pages >= 0)
    f.rss_bytes = static_cast<uint64_t>(p.stat.rss_pages) * static_cast<uint64_t>(::getpagesize());
  long tps = s.proc.ticks_per_second;
  if (tps > 0)
    f.cpu = std::chrono::milliseconds(
        static_cast<long long>(p.stat.cpu_ticks * 1000 / static_cast<uint64_t>(tps)));
  auto start = s.start_time(p.stat);
  if (start && s.timestamp >= *start) {
    auto lived = std::chrono::duration_cast<std::chrono::milliseconds>(s.timestamp - *start);
    f.run_time = std::chrono::duration_cast<std::chrono::seconds>(lived);
    // Under a second of life says little: the figure would swing on one tick.
    if (f.cpu && lived.count() >= 1000)
      f.cpu_percent =
          100.0 * static_cast<double>(f.cpu->count()) / static_cast<double>(lived.count());
  }
  return f;
}

std::string cpu_percent_text(const std::optional<double>& percent) {
  if (!percent) return "-";
  return *percent < 99.95 ? fmt::format("{:.1f}", *percent) : fmt::format("{:.0f}", *percent);
}

std::string cpu_time_text(const std::optional<std::chrono::milliseconds>& cpu) {
  if (!cpu) return "-";
  long long s = cpu->count() / 1000;
  long long days = s / 86400, hours = s / 3600 % 24, minutes = s / 60 % 60, seconds = s % 60;
  if (days) return fmt::format("{}-{:02}:{:02}:{:02}", days, hours, minutes, seconds);
  if (hours) return fmt::format("{}:{:02}:{:02}", hours, minutes, seconds);
  return fmt::format("{}:{:02}", minutes, seconds);
}

std::string rss_text(const std::optional<uint64_t>& bytes) {
  return bytes ? text::compact_bytes(*bytes) : "-";
}

}  // namespace gpureap::output
