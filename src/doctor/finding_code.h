#pragma once
// The code of a finding: what kind of problem it is. The strings are stable (alert rules,
// `--only`, scripts, the doctor JSON and the metrics' `code` label name them); code compares
// codes as this enum, never as text.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpureap::doctor {

enum class FindingCode {
  DriverMissing,
  DriverMismatch,
  DriverNotAnswering,
  GpuError,
  DriverRecordLayout,
  IncompleteView,
  IpcResidue,
  // Shared memory nothing uses now that no evidence shows a gone job left: maybe kept on purpose.
  IpcUnused,
  ForeignNamespace,
  NoSuchProcess,
  Releasing,
  LeakedMemory,
  UnattributedMemory,
  InheritedHolder,
  OrphanHolder,
  StoppedHolder,
  UninterruptibleHolder,
  UnreapedZombies,
  ProtectedHolder,
  GpuKernelError,
  // A gone client whose work a live server of other processes' work (a WorkServer) still
  // runs: the server keeps its memory.
  KeptByServer,
  // A distributed job one of whose ranks is gone while the others wait for it (a collective
  // with a dead peer), holding their GPUs' memory.
  StalledJob,
};

// "driver-missing", "no-such-process", ...
std::string_view to_string(FindingCode code);
std::optional<FindingCode> finding_code_from_string(std::string_view text);
// Every code, in the order above.
const std::vector<FindingCode>& all_finding_codes();

// Names typed by a user (`--only`): every one must be a code, so a typo cannot silently
// report "healthy"; the error lists the codes.
core::Result<std::vector<FindingCode>> parse_finding_codes(const std::vector<std::string>& names);
// "driver-missing, driver-mismatch, ..."
std::string finding_code_list();

}  // namespace gpureap::doctor
