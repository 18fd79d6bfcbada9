#include "doctor/fixable.h"

#include <algorithm>
#include <optional>

namespace gpureap::doctor {
namespace {

std::optional<core::Anomaly> remedied_anomaly(const Finding& f) {
  switch (f.code) {
    case FindingCode::NoSuchProcess:
      if (f.severity == Severity::Critical) return core::Anomaly::NoSuchProcess;
      return std::nullopt;
    case FindingCode::OrphanHolder:
      return core::Anomaly::Orphan;
    case FindingCode::InheritedHolder:
      if (f.severity != Severity::Info) return core::Anomaly::InheritedHolder;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::vector<Fixable> fixable(const std::vector<Finding>& findings) {
  std::vector<Fixable> out;
  for (const auto& f : findings) {
    if (f.pids.empty()) continue;
    auto anomaly = remedied_anomaly(f);
    if (!anomaly) continue;
    pid_t pid = f.pids.front();
    if (std::none_of(out.begin(), out.end(), [&](const Fixable& x) { return x.pid == pid; }))
      out.push_back({pid, *anomaly});
  }
  std::sort(out.begin(), out.end(),
            [](const Fixable& a, const Fixable& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace gpureap::doctor
