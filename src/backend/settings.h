#pragma once
// What a backend may need to be made: the runtime roots and the libraries a user named.
#include <cstdint>
#include <optional>
#include <string>

namespace gpureap::backend {

struct BackendSettings {
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  std::string sys_root = "/sys";  // DRM devices and AMD's KFD
  // --nvml-library; empty: $GPUREAP_NVML_LIBRARY, then the normal dlopen search.
  std::optional<std::string> nvml_library;
  // Upper bound for a valid PID in a driver's process record (<proc-root>/sys/kernel/pid_max).
  uint64_t pid_max = 4194304;
};

}  // namespace gpureap::backend
