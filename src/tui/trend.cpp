#include "tui/trend.h"

#include <algorithm>
#include <cmath>

namespace gpureap::tui {

std::vector<std::optional<double>> buckets(const std::deque<std::pair<SystemTime, double>>& samples,
                                           SystemTime now, std::chrono::seconds window,
                                           size_t columns) {
  std::vector<std::optional<double>> out(columns);
  if (columns == 0 || window.count() <= 0) return out;
  auto start = now - window;
  auto span = std::chrono::duration<double>(window).count();
  for (const auto& [t, v] : samples) {
    if (t < start || t > now) continue;
    double pos = std::chrono::duration<double>(t - start).count() / span;
    auto i = std::min(columns - 1, static_cast<size_t>(pos * static_cast<double>(columns)));
    out[i] = std::max(out[i].value_or(v), v);
  }
  return out;
}

std::string sparkline(const std::vector<std::optional<double>>& values, const Glyphs& g) {
  std::string out;
  for (const auto& v : values) {
    if (!v) {
      out += ' ';
      continue;
    }
    double x = std::clamp(*v, 0.0, 1.0);
    auto level = static_cast<size_t>(std::lround(x * 7.0));
    out += g.spark[level];
  }
  return out;
}

void MemoryTrend::record(const core::Snapshot& s) {
  for (const auto& gpu : s.drivers.gpus) {
    if (gpu.utilization_percent) {
      auto& u = utilization_[gpu.index];
      u.emplace_back(s.timestamp, static_cast<double>(*gpu.utilization_percent) / 100.0);
      while (!u.empty() && u.front().first < s.timestamp - window_) u.pop_front();
    }
    if (!gpu.memory.used_bytes || !gpu.memory.total_bytes || *gpu.memory.total_bytes == 0) continue;
    auto& series = series_[gpu.index];
    series.emplace_back(s.timestamp, static_cast<double>(*gpu.memory.used_bytes) /
                                         static_cast<double>(*gpu.memory.total_bytes));
    while (!series.empty() && series.front().first < s.timestamp - window_) series.pop_front();
  }
}

std::string MemoryTrend::sparkline(unsigned gpu, size_t width, SystemTime now,
                                   const Glyphs& g) const {
  auto it = series_.find(gpu);
  if (it == series_.end()) return std::string(width, ' ');
  return tui::sparkline(buckets(it->second, now, window_, width), g);
}

std::string MemoryTrend::utilization_sparkline(unsigned gpu, size_t width, SystemTime now,
                                               const Glyphs& g) const {
  auto it = utilization_.find(gpu);
  if (it == utilization_.end()) return std::string(width, ' ');
  return tui::sparkline(buckets(it->second, now, window_, width), g);
}

size_t MemoryTrend::samples(unsigned gpu) const {
  auto it = series_.find(gpu);
  return it == series_.end() ? 0 : it->second.size();
}

}  // namespace gpureap::tui
