#include "doctor/finding.h"

#include <algorithm>

namespace gpureap::doctor {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::Info:
      return "info";
    case Severity::Warning:
      return "warning";
    case Severity::Critical:
      return "critical";
  }
  return "?";
}

std::optional<Severity> severity_from_string(std::string_view s) {
  for (Severity v : {Severity::Info, Severity::Warning, Severity::Critical})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

const std::vector<std::string_view>& finding_codes() {
  static const std::vector<std::string_view> codes = {
      "driver-missing",   "driver-mismatch", "driver-not-answering", "gpu-error",
      "nvml-layout",      "incomplete-view", "ipc-residue",          "foreign-namespace",
      "no-such-process",  "releasing",       "leaked-memory",        "unattributed-memory",
      "inherited-holder", "orphan-holder",   "stopped-holder",       "uninterruptible-holder",
      "unreaped-zombies", "protected-holder"};
  return codes;
}

void sort_findings(std::vector<Finding>& f) {
  std::stable_sort(f.begin(), f.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    return a.memory_bytes > b.memory_bytes;
  });
}

Severity worst(const std::vector<Finding>& f) {
  Severity w = Severity::Info;
  for (const auto& x : f) w = std::max(w, x.severity);
  return w;
}

}  // namespace gpureap::doctor
