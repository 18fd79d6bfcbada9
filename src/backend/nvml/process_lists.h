#pragma once
// Reading a GPU's process lists from NVML: a read into a buffer that holds a usual GPU's
// processes (grown when the driver says it is short), the layout probe, the compute/graphics/MPS
// merge, per-process SM utilisation and driver-side process names.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/nvml/abi.h"
#include "backend/nvml/process_records.h"
#include "backend/nvml/symbol_table.h"
#include "core/gpu.h"
#include "core/result.h"

namespace gpureap::backend::nvml {

// Lists are read straight into a buffer of kProcessFirstRead records (and samples of per-process
// utilisation into one of kSamplesFirstRead): the size query NVML's two-call protocol puts first
// costs as much as the read (each walks the driver's context table; the utilisation samples'
// is the slowest call of a listing), and its answer matters only when the buffer is short. A
// short buffer is then sized from the count the driver gave, with this many spare records for
// processes that start meanwhile, and the read retried.
inline constexpr unsigned kProcessFirstRead = 64;
inline constexpr unsigned kSamplesFirstRead = 512;
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

// The latest SM utilisation sample of each PID on the device (empty when unknown): one call,
// the slowest of a listing.
using SmUtilization = std::map<unsigned, unsigned>;
SmUtilization read_sm_utilization(const SymbolTable& api, nvmlDevice_t device);

// The device's lists, each process with its SM utilisation, which `utilization` gives when the
// lists are read (read_gpu asks for it beside the GPU's other calls); without it, read here.
ProcessLists read_process_lists(const SymbolTable& api, nvmlDevice_t device, unsigned index,
                                const RecordLimits& limits,
                                const std::function<SmUtilization()>& utilization = nullptr);

}  // namespace gpureap::backend::nvml
