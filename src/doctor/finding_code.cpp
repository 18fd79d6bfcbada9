#include "doctor/finding_code.h"

#include "text/enum_names.h"

namespace gpureap::doctor {

// The one list of the codes and their names (text/enum_names.h): an enumerator without a case
// here does not compile (-Wswitch, no default).
std::string_view to_string(FindingCode code) {
  switch (code) {
    case FindingCode::DriverMissing:
      return "driver-missing";
    case FindingCode::DriverMismatch:
      return "driver-mismatch";
    case FindingCode::DriverNotAnswering:
      return "driver-not-answering";
    case FindingCode::GpuError:
      return "gpu-error";
    case FindingCode::DriverRecordLayout:
      return "nvml-layout";
    case FindingCode::IncompleteView:
      return "incomplete-view";
    case FindingCode::IpcResidue:
      return "ipc-residue";
    case FindingCode::IpcUnused:
      return "ipc-unused";
    case FindingCode::ForeignNamespace:
      return "foreign-namespace";
    case FindingCode::NoSuchProcess:
      return "no-such-process";
    case FindingCode::Releasing:
      return "releasing";
    case FindingCode::LeakedMemory:
      return "leaked-memory";
    case FindingCode::UnattributedMemory:
      return "unattributed-memory";
    case FindingCode::InheritedHolder:
      return "inherited-holder";
    case FindingCode::OrphanHolder:
      return "orphan-holder";
    case FindingCode::StoppedHolder:
      return "stopped-holder";
    case FindingCode::UninterruptibleHolder:
      return "uninterruptible-holder";
    case FindingCode::UnreapedZombies:
      return "unreaped-zombies";
    case FindingCode::ProtectedHolder:
      return "protected-holder";
    case FindingCode::GpuKernelError:
      return "gpu-xid";
    case FindingCode::KeptByServer:
      return "kept-by-server";
    case FindingCode::StalledJob:
      return "stalled-job";
  }
  return {};  // no enumerator: no name
}

std::optional<FindingCode> finding_code_from_string(std::string_view name) {
  return text::enum_from_name<FindingCode>(name);
}

const std::vector<FindingCode>& all_finding_codes() {
  return text::enumerators<FindingCode>();
}

std::string finding_code_list() {
  return text::enum_name_list<FindingCode>();
}

core::Result<std::vector<FindingCode>> parse_finding_codes(const std::vector<std::string>& names) {
  std::vector<FindingCode> out;
  for (const auto& n : names) {
    auto c = finding_code_from_string(n);
    if (!c)
      return core::Error{"unknown finding code \"" + n + "\"", "codes: " + finding_code_list()};
    out.push_back(*c);
  }
  return out;
}

}  // namespace gpureap::doctor
