#pragma once
// The NVIDIA backend: NVML loaded at run time with dlopen (no NVIDIA header or library at
// build time).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backend/gpu_backend.h"
#include "backend/settings.h"

namespace gpureap::backend::nvml {

struct NvmlOptions {
  // --nvml-library or GPUREAP_NVML_LIBRARY; empty: libnvidia-ml.so.1, then libnvidia-ml.so.
  std::optional<std::string> library_path;
  // Upper bound for a valid PID in a process record (from <proc-root>/sys/kernel/pid_max).
  uint64_t pid_max = 4194304;
  // The roots to look for NVIDIA hardware in (nvidia_presence.h) when NVML cannot start: with
  // none there, the backend reports no device instead of an error. Unset: always an error.
  // The sys root also names each GPU's DRM nodes (drm_nodes.h); unset: none are joined.
  std::optional<std::string> dev_root;
  std::optional<std::string> sys_root;
  // Where the kernel module names MIG instances' capability files (mig_capabilities.h); unset:
  // MIG instances are read without the files that grant them.
  std::optional<std::string> proc_root;
};

std::unique_ptr<GpuBackend> make_nvml_backend(const NvmlOptions& options);
// The registry's maker: the library a user named, else $GPUREAP_NVML_LIBRARY, else the search.
std::unique_ptr<GpuBackend> make_nvml_backend_for(const BackendSettings& settings);

}  // namespace gpureap::backend::nvml
