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

void keep_codes(std::vector<Finding>& f, const std::vector<FindingCode>& codes) {
  if (codes.empty()) return;
  std::erase_if(f, [&](const Finding& x) {
    return std::find(codes.begin(), codes.end(), x.code) == codes.end();
  });
}

}  // namespace gpureap::doctor
