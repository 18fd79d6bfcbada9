#pragma once
// Each GPU's used memory and utilisation over the last minutes, for the sparklines in the
// header. Bounded: samples older than the window are dropped.
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "tui/frame.h"

namespace gpureap::tui {

using SystemTime = std::chrono::system_clock::time_point;

// The largest value of each of `columns` equal slices of [now - window, now]; empty where no
// sample fell.
std::vector<std::optional<double>> buckets(const std::deque<std::pair<SystemTime, double>>& samples,
                                           SystemTime now, std::chrono::seconds window,
                                           size_t columns);
// One glyph per value in [0, 1] (0: the lowest bar, 1: a full block); a space where empty.
std::string sparkline(const std::vector<std::optional<double>>& values, const Glyphs& glyphs);

class MemoryTrend {
 public:
  explicit MemoryTrend(std::chrono::seconds window = std::chrono::minutes(5)) : window_(window) {}
  // Used / total of every GPU that reports both; the utilisation of those that report it.
  void record(const core::Snapshot& s);
  std::string sparkline(unsigned gpu, size_t width, SystemTime now, const Glyphs& glyphs) const;
  std::string utilization_sparkline(unsigned gpu, size_t width, SystemTime now,
                                    const Glyphs& glyphs) const;
  bool has_utilization(unsigned gpu) const { return utilization_.count(gpu) > 0; }
  std::chrono::seconds window() const { return window_; }
  size_t samples(unsigned gpu) const;

 private:
  std::chrono::seconds window_;
  std::map<unsigned, std::deque<std::pair<SystemTime, double>>> series_;
  std::map<unsigned, std::deque<std::pair<SystemTime, double>>> utilization_;
};

}  // namespace gpureap::tui
