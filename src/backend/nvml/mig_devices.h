#pragma once
// A GPU's MIG devices (NVML API reference, "Multi Instance GPU Management"): up to
// nvmlDeviceGetMaxMigDeviceCount handles under the parent, an index without a MIG device
// answering NOT_FOUND (slots can be sparse). One MIG device handle is one compute instance;
// its memory is its GPU instance's.
#include <optional>
#include <string>
#include <vector>

#include "backend/nvml/abi.h"
#include "backend/nvml/symbol_table.h"
#include "core/gpu.h"

namespace gpureap::backend::nvml {

struct MigDevice {
  nvmlDevice_t handle = nullptr;
  core::GpuInstance instance;
};

// Empty when the library lacks the MIG functions or the GPU has no MIG device; a MIG device
// whose GPU instance id cannot be read is left out (nothing could place a process on it).
std::vector<MigDevice> read_mig_devices(const SymbolTable& api, nvmlDevice_t parent);

// Gives each MIG instance the device numbers of its capability files (the GPU instance's and
// the compute instance's /dev/nvidia-caps/nvidia-cap<M>), as the kernel module names them under
// <proc_root>/driver/nvidia/capabilities for the GPU's minor; the major is /proc/devices'
// "nvidia-caps". Nothing is guessed: without those files the numbers stay empty.
void attach_mig_capabilities(std::vector<core::Gpu>& gpus, const std::string& proc_root);

// "1g.10gb" of "NVIDIA H100 80GB HBM3 MIG 1g.10gb": the part after "MIG ".
std::optional<std::string> mig_profile(const std::string& name);

}  // namespace gpureap::backend::nvml
