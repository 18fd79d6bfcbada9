#include "backend/nvml/process_lists.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include "backend/nvml/errors.h"
#include "backend/nvml/mps_server.h"

namespace gpureap::backend::nvml {
namespace {

struct ListSpec {
  Fn fn;
  core::GpuProcessKind kind;
  const char* what;
};

// Compute first: a PID in several lists keeps the first kind, except that the MPS list marks
// its clients whatever else lists them (see merge_process).
constexpr std::array<ListSpec, 3> kLists = {{
    {Fn::ComputeRunningProcesses, core::GpuProcessKind::Compute, "compute"},
    {Fn::GraphicsRunningProcesses, core::GpuProcessKind::Graphics, "graphics"},
    {Fn::MpsComputeRunningProcesses, core::GpuProcessKind::ServerClient, "MPS"},
}};

// More processes than any GPU runs: a count beyond this is garbage (a broken driver or
// library), and a buffer sized from it would be gigabytes.
constexpr unsigned kMaxProcessRecords = 1u << 16;

struct RawList {
  nvmlReturn_t rc = NVML_SUCCESS;
  std::optional<unsigned> implausible;  // the count the driver claimed, beyond kMaxProcessRecords
  std::vector<std::byte> buffer;
  std::size_t count = 0;
  bool overfilled = false;  // the driver claimed more records than the buffer holds
};

// Read into a canary-filled buffer with slack (kProcessFirstRead records at first), growing it
// while the driver says it is too small.
RawList fetch_records(nvmlDeviceGetProcesses_fn fn, nvmlDevice_t device) {
  RawList list;
  unsigned needed = kProcessFirstRead;
  for (int attempt = 1; attempt <= kProcessReadAttempts; ++attempt) {
    if (needed > kMaxProcessRecords) {
      list.implausible = needed;
      return list;
    }
    const unsigned capacity = needed + kProcessSlack * static_cast<unsigned>(attempt);
    list.buffer.assign(std::size_t{capacity} * kLargestRecordStride, kCanaryByte);
    unsigned count = capacity;
    list.rc = fn(device, &count, list.buffer.data());
    if (list.rc == NVML_SUCCESS) {
      list.overfilled = count > capacity;
      list.count = count;
      if (count == 0) list.buffer.clear();
      return list;
    }
    if (list.rc != NVML_ERROR_INSUFFICIENT_SIZE) return list;
    needed = std::max(needed, count);
  }
  return list;
}

std::string list_error(unsigned index, const char* what, nvmlReturn_t rc, const SymbolTable& api,
                       const char* function) {
  const std::string base = "the " + std::string(what) + " process list of GPU " +
                           std::to_string(index) + " could not be read (" + function +
                           " returned " + return_code_name(rc) + ")";
  switch (rc) {
    case NVML_ERROR_NO_PERMISSION:
      return base + ": run gpureap as root to see every process";
    case NVML_ERROR_NOT_SUPPORTED:
      return base + ": this GPU or driver does not report processes";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return base + ": processes kept starting while it was read; try again";
    default: {
      const char* text = nvml_error_text(api, rc);
      return base + (text != nullptr ? std::string(": ") + text : std::string()) +
             "; check `nvidia-smi` and `dmesg`";
    }
  }
}

std::optional<std::string> driver_process_name(const SymbolTable& api, pid_t pid) {
  if (!api.has(Fn::ProcessName)) return std::nullopt;
  std::array<char, NVML_PROCESS_NAME_BUFFER_SIZE> name{};
  auto fn = api.get<nvmlSystemGetProcessName_fn>(Fn::ProcessName);
  if (fn(static_cast<unsigned>(pid), name.data(), static_cast<unsigned>(name.size())) !=
      NVML_SUCCESS) {
    return std::nullopt;
  }
  name.back() = '\0';
  if (name[0] == '\0') return std::nullopt;
  return std::string(name.data());
}

// Reads one list into `result`; false when the GPU's lists must stop here (`result` then says
// why and holds no process).
bool read_list(const SymbolTable& api, nvmlDevice_t device, unsigned index,
               const RecordLimits& limits, const ListSpec& list, ProcessLists& result) {
  if (!api.has(list.fn)) return true;
  RawList raw = fetch_records(api.get<nvmlDeviceGetProcesses_fn>(list.fn), device);
  if (raw.rc == NVML_ERROR_GPU_IS_LOST) {
    result.gpu_error = gpu_error(index, raw.rc, api.name(list.fn), nvml_error_text(api, raw.rc));
    result.processes.clear();
    return false;
  }
  // Graphics and MPS lists are legitimately unsupported on many GPUs.
  if (raw.rc == NVML_ERROR_NOT_SUPPORTED && list.fn != Fn::ComputeRunningProcesses) return true;
  if (raw.implausible) {
    result.processes_error = "the driver claims " + std::to_string(*raw.implausible) + " " +
                             list.what + " processes on GPU " + std::to_string(index) +
                             ", more than any GPU runs: its process lists are not trusted; check "
                             "`nvidia-smi` and the driver version";
    result.processes.clear();
    return false;
  }
  if (raw.rc != NVML_SUCCESS) {
    if (raw.rc == NVML_ERROR_NO_PERMISSION) result.refused = true;
    if (!result.processes_error) {
      result.processes_error = list_error(index, list.what, raw.rc, api, api.name(list.fn));
    }
    return true;
  }
  auto decoded =
      raw.overfilled
          ? core::Result<DecodedRecords>(core::Error{kLayoutNotRecognised, ""})
          : decode_process_records(raw.buffer, raw.count, api.version(list.fn), limits, list.kind);
  if (!decoded) {
    // One list that fails validation means the struct is not understood: show nothing
    // from this GPU rather than garbage next to plausible entries.
    result.processes_error = decoded.error().message;
    result.processes.clear();
    return false;
  }
  if (!result.record_layout && decoded->stride > 0 && !decoded->processes.empty())
    result.record_layout =
        std::string(api.name(list.fn)) + ", " + std::to_string(decoded->stride) + "-byte records";
  for (auto& process : decoded->processes) merge_process(result.processes, std::move(process));
  return true;
}

// The driver's name for each listed process not named yet.
void name_processes(const SymbolTable& api, std::vector<core::DriverProcess>& processes) {
  for (auto& process : processes)
    if (!process.name) process.name = driver_process_name(api, process.pid);
}

// Whether the GPU's MPS list can have clients, judged from the lists read before it: the MPS
// server holds a context on every GPU it serves, so the driver lists it as a compute process
// (mps_server.h). Where the lists were read, processes are listed and each has a name, none of
// them the server, no server serves this GPU and the MPS list is not asked for. A list that
// failed, a process without a name, or no process at all leaves the question open, and the
// MPS list is read.
bool may_run_mps_clients(const ProcessLists& lists) {
  if (lists.processes_error || lists.processes.empty()) return true;
  return std::any_of(
      lists.processes.begin(), lists.processes.end(),
      [](const core::DriverProcess& p) { return !p.name || names_mps_server(*p.name); });
}

}  // namespace

// Samples are optional extras: any failure means "unknown".
SmUtilization read_sm_utilization(const SymbolTable& api, nvmlDevice_t device) {
  SmUtilization latest_util;
  if (!api.has(Fn::ProcessUtilization)) return latest_util;
  auto fn = api.get<nvmlDeviceGetProcessUtilization_fn>(Fn::ProcessUtilization);
  unsigned needed = kSamplesFirstRead;
  nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
  std::vector<nvmlProcessUtilizationSample_t> samples;
  for (int attempt = 1; attempt <= kProcessReadAttempts; ++attempt) {
    if (needed > kMaxProcessRecords) return latest_util;
    samples.assign(needed + kProcessSlack * static_cast<unsigned>(attempt), {});
    unsigned count = static_cast<unsigned>(samples.size());
    rc = fn(device, samples.data(), &count, 0);
    if (rc == NVML_SUCCESS) {
      samples.resize(std::min<std::size_t>(count, samples.size()));
      break;
    }
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE) return latest_util;
    needed = std::max(needed, count);
  }
  if (rc != NVML_SUCCESS) return latest_util;
  std::map<unsigned, unsigned long long> latest_time;
  for (const auto& sample : samples) {
    if (sample.smUtil > 100) continue;
    auto seen = latest_time.find(sample.pid);
    if (seen == latest_time.end() || sample.timeStamp >= seen->second) {
      latest_time[sample.pid] = sample.timeStamp;
      latest_util[sample.pid] = sample.smUtil;
    }
  }
  return latest_util;
}

ProcessLists read_process_lists(const SymbolTable& api, nvmlDevice_t device, unsigned index,
                                const RecordLimits& limits,
                                const std::function<SmUtilization()>& utilization) {
  ProcessLists result;
  if (!api.has(Fn::ComputeRunningProcesses)) {
    result.processes_error =
        "this NVML library cannot list compute processes "
        "(nvmlDeviceGetComputeRunningProcesses is missing): update the NVIDIA driver";
  }
  for (const ListSpec& list : kLists) {
    if (list.fn == Fn::MpsComputeRunningProcesses) {
      name_processes(api, result.processes);
      if (!may_run_mps_clients(result)) continue;
    }
    if (!read_list(api, device, index, limits, list, result)) return result;
  }
  name_processes(api, result.processes);

  const auto sm_utilization = utilization ? utilization() : read_sm_utilization(api, device);
  for (auto& process : result.processes) {
    auto util = sm_utilization.find(static_cast<unsigned>(process.pid));
    if (util != sm_utilization.end()) process.sm_utilization_percent = util->second;
  }
  return result;
}

}  // namespace gpureap::backend::nvml
