#include "doctor/reset_remedy.h"

#include <fmt/format.h>

namespace gpureap::doctor {

std::string reset_command(const core::Snapshot& s, unsigned gpu) {
  const core::Gpu* g = s.gpu(gpu);
  if (!g || g->backend == "nvml") return fmt::format("gpureap reset --gpu {}", gpu);
  if (g->vendor == "amd" && g->minor)
    return fmt::format("sudo cat /sys/kernel/debug/dri/{}/amdgpu_gpu_recover", *g->minor);
  return "reboot";
}

}  // namespace gpureap::doctor
