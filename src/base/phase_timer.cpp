#include "base/phase_timer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace gpureap::base {

bool timing_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("GPUREAP_TIMING");
    return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

std::string timing_line(const std::string& phase, std::chrono::nanoseconds took) {
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", static_cast<double>(took.count()) / 1e6);
  return "gpureap: timing: " + phase + ": " + ms + " ms";
}

Phase::Phase(std::string name) {
  if (!timing_enabled()) return;
  name_ = std::move(name);
  started_ = std::chrono::steady_clock::now();
}

Phase::~Phase() {
  if (name_.empty()) return;
  const auto took = std::chrono::steady_clock::now() - started_;
  // One write per line, so phases ending on several threads do not interleave.
  const std::string line = timing_line(name_, took) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace gpureap::base
