// Process lists of the double, honouring NVML's two-call protocol. The record layout
// follows the function version (16/24 bytes) and, for _v3, the scenario's stride (24 or the
// 32-byte R535 layout). Variant builds leave out the newer exports (see CMakeLists.txt).
#include <chrono>
#include <cstring>
#include <vector>

#include "liveness.h"
#include "nvml_abi.h"
#include "runtime.h"

using fake_nvml::Gpu;
using fake_nvml::Kind;
using fake_nvml::MigDevice;
using fake_nvml::Process;
using fake_nvml::Scenario;

namespace {

// A MIG device's lists hold the contexts of its compute instance alone.
std::vector<const Process*> listed_of_kind(const Scenario& scenario, unsigned index, Kind kind,
                                           const MigDevice* mig) {
  std::vector<const Process*> matching;
  for (const Process* process : fake_nvml::listed_processes(scenario, index)) {
    if (mig && (process->gpu_instance_id != mig->gpu_instance_id ||
                process->compute_instance_id != mig->compute_instance_id))
      continue;
    for (Kind k : process->kinds) {
      if (k == kind) {
        matching.push_back(process);
        break;
      }
    }
  }
  return matching;
}

// What a driver with a misread struct would hand back: nothing a validator should accept.
void write_garbage(char* out, unsigned stride, unsigned i) {
  for (unsigned b = 0; b < stride; ++b) out[b] = static_cast<char>(0xD0 + ((b + i) & 0x0F));
}

void write_record(char* out, unsigned stride, const Process& process) {
  const unsigned long long used = process.used_bytes.value_or(NVML_VALUE_NOT_AVAILABLE);
  const unsigned gi = process.hide_instance_ids ? 0xFFFFFFFFu : process.gpu_instance_id;
  const unsigned ci = process.hide_instance_ids ? 0xFFFFFFFFu : process.compute_instance_id;
  if (stride == sizeof(nvmlProcessInfo_v1_t)) {
    const nvmlProcessInfo_v1_t record{process.pid, used};
    std::memcpy(out, &record, sizeof record);
  } else if (stride == sizeof(nvmlProcessInfo_v2_t)) {
    const nvmlProcessInfo_v2_t record{process.pid, used, gi, ci};
    std::memcpy(out, &record, sizeof record);
  } else {
    const nvmlProcessInfo_r535_t record{process.pid, used, gi, ci, 0};
    std::memcpy(out, &record, sizeof record);
  }
}

nvmlReturn_t running_processes(const char* function, Kind kind, int version, nvmlDevice_t device,
                               unsigned int* infoCount, void* infos) {
  return fake_nvml::call_any_device(
      function, device,
      [&](const Scenario& scenario, unsigned index, const Gpu& gpu, const MigDevice* mig) {
        if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        if (!mig && gpu.aggregate_processes_error != NVML_SUCCESS)
          return gpu.aggregate_processes_error;
        const auto listed = listed_of_kind(scenario, index, kind, mig);
        const auto count = static_cast<unsigned>(listed.size());
        if (infos == nullptr) {
          if (*infoCount != 0) return NVML_ERROR_INVALID_ARGUMENT;
          // size_query_undercount: processes that start between the two calls.
          const unsigned undercount = scenario.size_query_undercount;
          *infoCount = count > undercount ? count - undercount : 0;
          return *infoCount == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
        }
        if (*infoCount < count) {
          *infoCount = count;
          return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        const unsigned stride = version == 1   ? sizeof(nvmlProcessInfo_v1_t)
                                : version == 2 ? sizeof(nvmlProcessInfo_v2_t)
                                               : scenario.process_info_v3_stride;
        char* out = static_cast<char*>(infos);
        for (unsigned i = 0; i < count; ++i) {
          if (gpu.corrupt_process_records) {
            write_garbage(out + std::size_t{i} * stride, stride, i);
          } else {
            write_record(out + std::size_t{i} * stride, stride, *listed[i]);
          }
        }
        *infoCount = count;
        return NVML_SUCCESS;
      });
}

}  // namespace

#define FAKE_NVML_PROCESS_EXPORT(NAME, KIND, VERSION)                              \
  FAKE_NVML_EXPORT nvmlReturn_t NAME(nvmlDevice_t device, unsigned int* infoCount, \
                                     nvmlProcessInfo_t* infos) {                   \
    return running_processes(#NAME, KIND, VERSION, device, infoCount, infos);      \
  }

#if !defined(FAKE_NVML_NO_PROCESS_V3) && !defined(FAKE_NVML_NO_PROCESS_V2)
FAKE_NVML_PROCESS_EXPORT(nvmlDeviceGetComputeRunningProcesses_v3, Kind::Compute, 3)
FAKE_NVML_PROCESS_EXPORT(nvmlDeviceGetGraphicsRunningProcesses_v3, Kind::Graphics, 3)
FAKE_NVML_PROCESS_EXPORT(nvmlDeviceGetMPSComputeRunningProcesses_v3, Kind::Mps, 3)
#endif
#if !defined(FAKE_NVML_NO_PROCESS_V2)
FAKE_NVML_PROCESS_EXPORT(nvmlDeviceGetComputeRunningProcesses_v2, Kind::Compute, 2)
FAKE_NVML_PROCESS_EXPORT(nvmlDeviceGetGraphicsRunningProcesses_v2, Kind::Graphics, 2)
FAKE_NVML_PROCESS_EXPORT(nvmlDeviceGetMPSComputeRunningProcesses_v2, Kind::Mps, 2)
#endif
FAKE_NVML_PROCESS_EXPORT(nvmlDeviceGetComputeRunningProcesses, Kind::Compute, 1)
FAKE_NVML_PROCESS_EXPORT(nvmlDeviceGetGraphicsRunningProcesses, Kind::Graphics, 1)
FAKE_NVML_PROCESS_EXPORT(nvmlDeviceGetMPSComputeRunningProcesses, Kind::Mps, 1)

// Samples exist only for listed processes the scenario gives an "sm_util".
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
    unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp) {
  (void)lastSeenTimeStamp;  // every sample is "now", so newer than any timestamp
  return fake_nvml::call_device(
      "nvmlDeviceGetProcessUtilization", device,
      [&](const Scenario& scenario, unsigned index, const Gpu&) {
        if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        std::vector<const Process*> sampled;
        for (const Process* process : fake_nvml::listed_processes(scenario, index)) {
          if (process->sm_util) sampled.push_back(process);
        }
        const auto count = static_cast<unsigned>(sampled.size());
        if (count == 0) return NVML_ERROR_NOT_FOUND;
        if (utilization == nullptr || *processSamplesCount < count) {
          *processSamplesCount = count;
          return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        using namespace std::chrono;
        const auto now_us = static_cast<unsigned long long>(
            duration_cast<microseconds>(system_clock::now().time_since_epoch()).count());
        for (unsigned i = 0; i < count; ++i) {
          utilization[i] = nvmlProcessUtilizationSample_t{
              sampled[i]->pid, now_us, *sampled[i]->sm_util, sampled[i]->mem_util, 0, 0};
        }
        *processSamplesCount = count;
        return NVML_SUCCESS;
      });
}
