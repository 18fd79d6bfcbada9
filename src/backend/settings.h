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
  // The folder holding the host's files (usr/share/misc/pci.ids, var/lib/docker, ...): --runtime-
  // root; empty: the folder above proc_root ("/" for /proc, /host for /host/proc).
  std::string runtime_root;
  // --nvml-library; empty: $GPUREAP_NVML_LIBRARY, then the normal dlopen search.
  std::optional<std::string> nvml_library;
  // Upper bound for a valid PID in a driver's process record (<proc-root>/sys/kernel/pid_max).
  uint64_t pid_max = 4194304;
};

// The folder that holds a procfs mount: the host's "/" for /proc, /host for /host/proc, where a
// container mounts the host's / and its proc.
std::string folder_above(const std::string& proc_root);
// settings.runtime_root, else the folder above its proc root.
std::string host_root(const BackendSettings& settings);

}  // namespace gpureap::backend
