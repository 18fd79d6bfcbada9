#include "doctor/fixable.h"

#include <algorithm>
#include <optional>

namespace gpureap::doctor {
namespace {

std::optional<core::Anomaly> remedied_anomaly(FindingCode code, Severity severity) {
  switch (code) {
    case FindingCode::NoSuchProcess:
      if (severity == Severity::Critical) return core::Anomaly::NoSuchProcess;
      return std::nullopt;
    case FindingCode::OrphanHolder:
      return core::Anomaly::Orphan;
    case FindingCode::InheritedHolder:
      if (severity != Severity::Info) return core::Anomaly::InheritedHolder;
      return std::nullopt;
    case FindingCode::DriverMissing:
    case FindingCode::DriverMismatch:
    case FindingCode::DriverNotAnswering:
    case FindingCode::GpuError:
    case FindingCode::DriverRecordLayout:
    case FindingCode::IncompleteView:
    case FindingCode::IpcResidue:
    case FindingCode::IpcUnused:
    case FindingCode::ForeignNamespace:
    case FindingCode::Releasing:
    case FindingCode::LeakedMemory:
    case FindingCode::UnattributedMemory:
    case FindingCode::StoppedHolder:
    case FindingCode::UninterruptibleHolder:
    case FindingCode::UnreapedZombies:
    case FindingCode::ProtectedHolder:
    case FindingCode::GpuKernelError:
    case FindingCode::KeptByServer:
    case FindingCode::StalledJob:
      return std::nullopt;
  }
  return std::nullopt;
}

void add(std::vector<Fixable>& out, pid_t pid, std::optional<core::Anomaly> anomaly) {
  if (!anomaly || pid <= 0) return;
  if (std::none_of(out.begin(), out.end(), [&](const Fixable& x) { return x.pid == pid; }))
    out.push_back({pid, *anomaly});
}

}  // namespace

std::vector<Fixable> fixable(const std::vector<Finding>& findings) {
  std::vector<Fixable> out;
  for (const auto& f : findings) {
    if (f.code == FindingCode::StalledJob) {
      for (pid_t pid : f.pids)
        if (pid > 0 &&
            std::none_of(out.begin(), out.end(), [&](const Fixable& x) { return x.pid == pid; }))
          out.push_back({pid, core::Anomaly::Orphan, true});
      continue;
    }
    if (!f.pids.empty()) add(out, f.pids.front(), remedied_anomaly(f.code, f.severity));
    // A facet is judged as the finding it would be on its own: a keeper that is an orphan is
    // one, a worker of a running job is not.
    for (const auto& x : f.facets) add(out, x.pid, remedied_anomaly(x.code, x.severity));
  }
  std::sort(out.begin(), out.end(),
            [](const Fixable& a, const Fixable& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace gpureap::doctor
