// Per-device metrics of the double. A metric the scenario leaves out answers NOT_SUPPORTED,
// as NVML does for sensors a board lacks.
#include <cstring>
#include <string>

#include "liveness.h"
#include "nvml_abi.h"
#include "runtime.h"

using fake_nvml::Gpu;
using fake_nvml::MigDevice;
using fake_nvml::Scenario;

namespace {

struct MemoryFigures {
  unsigned long long total, reserved, used, free;
};

// NVML semantics (v2): used = driver-held + listed contexts, excluding reserved;
// free = total - reserved - used. Memory a context holds counts while it is listed.
// A MIG device's are its GPU instance's: the contexts listed in that GPU instance.
MemoryFigures memory_figures(const Scenario& scenario, unsigned index, const Gpu& gpu,
                             const MigDevice* mig) {
  unsigned long long used = mig ? 0 : gpu.driver_held_bytes;
  for (const auto* process : fake_nvml::listed_processes(scenario, index)) {
    if (mig && process->gpu_instance_id != mig->gpu_instance_id) continue;
    if (process->used_bytes) used += *process->used_bytes;
  }
  const unsigned long long total = mig ? mig->total_bytes : gpu.total_bytes;
  const unsigned long long reserved = mig ? 0 : gpu.reserved_bytes;
  const unsigned long long taken = used + reserved;
  const unsigned long long free = taken >= total ? 0 : total - taken;
  return {total, reserved, used, free};
}

// Fixed-size, NUL-terminated char fields of NVML structs.
template <std::size_t N>
void copy_field(char (&field)[N], const std::string& text) {
  const std::size_t n = text.size() < N - 1 ? text.size() : N - 1;
  std::memcpy(field, text.data(), n);
  field[n] = '\0';
}

// The legacy id has a 4-digit domain: "0000:17:00.0".
std::string legacy_bus_id(const std::string& id) {
  return id.size() > 12 ? id.substr(id.size() - 12) : id;
}

template <class T>
nvmlReturn_t optional_out(const std::optional<T>& value, unsigned int* out) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  *out = static_cast<unsigned>(*value);
  return NVML_SUCCESS;
}

nvmlReturn_t pci_info(const char* function, nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return fake_nvml::call_device(function, device, [&](const Scenario&, unsigned, const Gpu& gpu) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pci = nvmlPciInfo_t{};
    copy_field(pci->busId, gpu.pci_bus_id);
    copy_field(pci->busIdLegacy, legacy_bus_id(gpu.pci_bus_id));
    return NVML_SUCCESS;
  });
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                unsigned int length) {
  return fake_nvml::call_any_device(
      "nvmlDeviceGetName", device,
      [&](const Scenario&, unsigned, const Gpu& gpu, const MigDevice* mig) {
        return fake_nvml::copy_string(mig ? mig->name : gpu.name, name, length);
      });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                unsigned int length) {
  return fake_nvml::call_any_device(
      "nvmlDeviceGetUUID", device,
      [&](const Scenario&, unsigned, const Gpu& gpu, const MigDevice* mig) {
        return fake_nvml::copy_string(mig ? mig->uuid : gpu.uuid, uuid, length);
      });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device,
                                                       unsigned int* minorNumber) {
  return fake_nvml::call_device("nvmlDeviceGetMinorNumber", device,
                                [&](const Scenario&, unsigned, const Gpu& gpu) {
                                  return optional_out(std::optional(gpu.minor), minorNumber);
                                });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info("nvmlDeviceGetPciInfo_v3", device, pci);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info("nvmlDeviceGetPciInfo_v2", device, pci);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_v1_t* pci) {
  return fake_nvml::call_device("nvmlDeviceGetPciInfo", device,
                                [&](const Scenario&, unsigned, const Gpu& gpu) {
                                  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
                                  *pci = nvmlPciInfo_v1_t{};
                                  copy_field(pci->busId, legacy_bus_id(gpu.pci_bus_id));
                                  return NVML_SUCCESS;
                                });
}

#ifndef FAKE_NVML_NO_MEMORY_V2
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                         nvmlMemory_v2_t* memory) {
  return fake_nvml::call_any_device(
      "nvmlDeviceGetMemoryInfo_v2", device,
      [&](const Scenario& scenario, unsigned index, const Gpu& gpu, const MigDevice* mig) {
        if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        // Real NVML rejects a version field that is not
        // NVML_STRUCT_VERSION(Memory, 2).
        if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        const MemoryFigures m = memory_figures(scenario, index, gpu, mig);
        memory->total = m.total;
        memory->reserved = m.reserved;
        memory->used = m.used;
        memory->free = m.free;
        return NVML_SUCCESS;
      });
}
#endif

// v1 has no reserved figure: it is folded into used.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return fake_nvml::call_any_device(
      "nvmlDeviceGetMemoryInfo", device,
      [&](const Scenario& scenario, unsigned index, const Gpu& gpu, const MigDevice* mig) {
        if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        const MemoryFigures m = memory_figures(scenario, index, gpu, mig);
        memory->total = m.total;
        memory->used = m.used + m.reserved;
        memory->free = m.free;
        return NVML_SUCCESS;
      });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                            nvmlUtilization_t* utilization) {
  return fake_nvml::call_device("nvmlDeviceGetUtilizationRates", device,
                                [&](const Scenario&, unsigned, const Gpu& gpu) {
                                  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
                                  if (!gpu.utilization_percent) return NVML_ERROR_NOT_SUPPORTED;
                                  utilization->gpu = *gpu.utilization_percent;
                                  utilization->memory = gpu.memory_utilization_percent.value_or(0);
                                  return NVML_SUCCESS;
                                });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                                       nvmlTemperatureSensors_t sensorType,
                                                       unsigned int* temp) {
  return fake_nvml::call_device("nvmlDeviceGetTemperature", device,
                                [&](const Scenario&, unsigned, const Gpu& gpu) {
                                  if (sensorType != NVML_TEMPERATURE_GPU)
                                    return NVML_ERROR_INVALID_ARGUMENT;
                                  return optional_out(gpu.temperature_celsius, temp);
                                });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return fake_nvml::call_device(
      "nvmlDeviceGetPowerUsage", device,
      [&](const Scenario&, unsigned, const Gpu& gpu) { return optional_out(gpu.power_mw, power); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                                   unsigned int* pendingMode) {
  return fake_nvml::call_device("nvmlDeviceGetMigMode", device,
                                [&](const Scenario&, unsigned, const Gpu& gpu) {
                                  if (currentMode == nullptr || pendingMode == nullptr)
                                    return NVML_ERROR_INVALID_ARGUMENT;
                                  if (!gpu.mig_mode) return NVML_ERROR_NOT_SUPPORTED;
                                  *currentMode = *pendingMode = *gpu.mig_mode ? 1u : 0u;
                                  return NVML_SUCCESS;
                                });
}
