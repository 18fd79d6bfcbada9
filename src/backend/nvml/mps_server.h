#pragma once
// NVIDIA's MPS server (nvidia-cuda-mps-server(1)): the program the MPS control daemon starts,
// one per user, which runs its clients' work in its own context on each GPU it serves.
#include <string_view>

namespace gpureap::backend::nvml {

inline constexpr std::string_view kMpsServerProgram = "nvidia-cuda-mps-server";

// Whether a process name the driver gives (a path, a program name, or the kernel's comm: the
// program name cut to 15 bytes) can be the MPS server's.
inline bool names_mps_server(std::string_view name) {
  const auto slash = name.rfind('/');
  if (slash != std::string_view::npos) name.remove_prefix(slash + 1);
  constexpr std::size_t kCommBytes = 15;  // TASK_COMM_LEN less its NUL
  if (name.size() < kCommBytes) return false;
  return kMpsServerProgram.starts_with(name);
}

}  // namespace gpureap::backend::nvml
