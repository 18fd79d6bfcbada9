// MIG device handles of the double (NVML API reference, "Multi Instance GPU Management"): a
// GPU in MIG mode has up to nvmlDeviceGetMaxMigDeviceCount MIG devices, an empty slot answers
// NOT_FOUND; each MIG device is one compute instance with its GPU and compute instance ids.
#include "nvml_abi.h"
#include "runtime.h"

using fake_nvml::Gpu;
using fake_nvml::MigDevice;
using fake_nvml::Scenario;

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                             unsigned int* count) {
  return fake_nvml::call_device("nvmlDeviceGetMaxMigDeviceCount", device,
                                [&](const Scenario&, unsigned, const Gpu& gpu) {
                                  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
                                  if (!gpu.max_mig_devices) return NVML_ERROR_NOT_SUPPORTED;
                                  // 0 when MIG mode is off, as NVML answers.
                                  *count = gpu.mig_mode.value_or(false) ? *gpu.max_mig_devices : 0;
                                  return NVML_SUCCESS;
                                });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                  unsigned int index,
                                                                  nvmlDevice_t* migDevice) {
  return fake_nvml::call_device("nvmlDeviceGetMigDeviceHandleByIndex", device,
                                [&](const Scenario&, unsigned gpu_index, const Gpu& gpu) {
                                  if (migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
                                  if (!gpu.mig_mode.value_or(false))
                                    return NVML_ERROR_INVALID_ARGUMENT;
                                  if (index >= gpu.max_mig_devices.value_or(0))
                                    return NVML_ERROR_INVALID_ARGUMENT;
                                  for (const MigDevice& mig : gpu.mig_devices) {
                                    if (mig.slot != index) continue;
                                    *migDevice = fake_nvml::mig_handle_for(gpu_index, index);
                                    return *migDevice ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
                                  }
                                  return NVML_ERROR_NOT_FOUND;
                                });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return fake_nvml::call_any_device(
      "nvmlDeviceGetGpuInstanceId", device,
      [&](const Scenario&, unsigned, const Gpu&, const MigDevice* mig) {
        if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        if (mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;  // not a MIG device handle
        *id = mig->gpu_instance_id;
        return NVML_SUCCESS;
      });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device,
                                                             unsigned int* id) {
  return fake_nvml::call_any_device(
      "nvmlDeviceGetComputeInstanceId", device,
      [&](const Scenario&, unsigned, const Gpu&, const MigDevice* mig) {
        if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        if (mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;
        *id = mig->compute_instance_id;
        return NVML_SUCCESS;
      });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
                                                          unsigned int* isMigDevice) {
  return fake_nvml::call_any_device(
      "nvmlDeviceIsMigDeviceHandle", device,
      [&](const Scenario&, unsigned, const Gpu&, const MigDevice* mig) {
        if (isMigDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        *isMigDevice = mig != nullptr ? 1u : 0u;
        return NVML_SUCCESS;
      });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                           nvmlDevice_t* device) {
  return fake_nvml::call_any_device(
      "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migDevice,
      [&](const Scenario&, unsigned index, const Gpu&, const MigDevice* mig) {
        if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        if (mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        *device = fake_nvml::handle_for(index);
        return NVML_SUCCESS;
      });
}
