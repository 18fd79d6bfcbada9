#include "doctor/finding_code.h"

namespace gpureap::doctor {

namespace {

// The one list of the codes and their names: an enumerator without a case here does not
// compile (-Wswitch, no default), and a value past the last enumerator has no name.
constexpr std::string_view code_name(FindingCode code) {
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
  return {};
}

// Every code in the enum's order: its values from 0 up to the first that has no name.
constexpr size_t kCodeCount = [] {
  size_t n = 0;
  while (!code_name(static_cast<FindingCode>(n)).empty()) ++n;
  return n;
}();

}  // namespace

std::string_view to_string(FindingCode code) {
  auto name = code_name(code);
  return name.empty() ? "?" : name;
}

const std::vector<FindingCode>& all_finding_codes() {
  static const std::vector<FindingCode> codes = [] {
    std::vector<FindingCode> out;
    for (size_t c = 0; c < kCodeCount; ++c) out.push_back(static_cast<FindingCode>(c));
    return out;
  }();
  return codes;
}

std::optional<FindingCode> finding_code_from_string(std::string_view text) {
  for (FindingCode c : all_finding_codes())
    if (to_string(c) == text) return c;
  return std::nullopt;
}

std::string finding_code_list() {
  std::string out;
  for (FindingCode c : all_finding_codes())
    out += (out.empty() ? "" : ", ") + std::string(to_string(c));
  return out;
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
