#pragma once
// Reading a GPU's process lists from NVML: the two-call protocol, the layout probe, the
// compute/graphics/MPS merge, per-process SM utilisation and driver-side process names.
#include <optional>
#include <string>
#include <vector>

#include "backend/nvml/abi.h"
#include "backend/nvml/process_records.h"
#include "backend/nvml/symbol_table.h"
#include "core/gpu.h"
#include "core/result.h"

namespace gpureap::backend::nvml {

// Processes come and go between the size query and the read, so the buffer gets this many
// spare records, and a read that still finds the buffer short is retried.
inline constexpr unsigned kProcessSlack = 8;
inline constexpr int kProcessReadAttempts = 4;

struct ProcessLists {
  std::vector<core::DriverProcess> processes;
  std::optional<std::string> processes_error;  // lists unreadable or untrustworthy
  std::optional<core::Error> gpu_error;        // the GPU itself failed (e.g. lost)
  // How the records were read, once some were: "nvmlDeviceGetComputeRunningProcesses_v3,
  // 24-byte records" (the stride is probed: it differs between driver releases).
  std::optional<std::string> record_layout;
  // A list was refused (NO_PERMISSION): in MIG mode NVML gives a GPU's aggregate lists only to
  // privileged callers, and each MIG device's lists to whoever may use it.
  bool refused = false;
};

ProcessLists read_process_lists(const SymbolTable& api, nvmlDevice_t device, unsigned index,
                                const RecordLimits& limits);

}  // namespace gpureap::backend::nvml
