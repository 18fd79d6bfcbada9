#pragma once
// What a backend may need to be made: the runtime roots and the libraries a user named.
#include <cstdint>
#include <map>
#include <string>

namespace gpureap::backend {

struct BackendSettings {
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  std::string sys_root = "/sys";  // the drivers' sysfs (devices, dynamic majors)
  // The folder holding the host's files (usr/share/misc/pci.ids, var/lib/docker, ...): --runtime-
  // root; empty: the folder above proc_root ("/" for /proc, /host for /host/proc).
  std::string runtime_root;
  // The driver libraries a user named, by backend name (each entry's LibraryOption); a
  // backend without one here reads its environment variable, then searches as dlopen does.
  std::map<std::string, std::string> libraries;
  // Upper bound for a valid PID in a driver's process record (<proc-root>/sys/kernel/pid_max).
  uint64_t pid_max = 4194304;
};

// The folder that holds a procfs mount: the host's "/" for /proc, /host for /host/proc, where a
// container mounts the host's / and its proc.
std::string folder_above(const std::string& proc_root);
// settings.runtime_root, else the folder above its proc root.
std::string host_root(const BackendSettings& settings);

}  // namespace gpureap::backend
