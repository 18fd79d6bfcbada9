#pragma once
// The NVIDIA GPUs as the kernel module describes them without NVML:
// <proc-root>/driver/nvidia/gpus/<bus>/information gives each GPU's model, UUID, bus location and
// device minor (/dev/nvidia<minor>). When NVML does not answer (a wedged driver), these still say
// which device file is which GPU, so `--gpu N` never falls back to guessing /dev/nvidia<N>.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/gpu.h"

namespace gpureap::backend::nvml {

struct GpuInformation {
  std::optional<std::string> model;
  std::optional<std::string> uuid;
  std::optional<std::string> bus_location;  // "0000:3b:00.0", lower case
  std::optional<unsigned> device_minor;
  bool excluded = false;  // "GPU Excluded: Yes": the driver does not use it; NVML lists it not
};

// One `information` file; the keys gpureap does not use are ignored.
GpuInformation parse_gpu_information(std::string_view text);

// The GPUs NVML would number, in its numbering (PCI bus order, as nvidia-smi's indices), each
// with its minor's device number, nothing measured, and `known_from_kernel` set. Empty when the
// folder is missing, or when one GPU's file cannot be read or lacks its bus or minor: a numbering
// with a hole would name the wrong GPU.
std::vector<core::Gpu> read_kernel_gpus(const std::string& proc_root);

}  // namespace gpureap::backend::nvml
