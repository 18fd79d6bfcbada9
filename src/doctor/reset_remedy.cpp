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

std::string reset_command(const core::Snapshot& s, unsigned gpu, const core::KernelLog* kernel) {
  if (kernel)
    for (auto it = kernel->events.rbegin(); it != kernel->events.rend(); ++it)
      if (it->needs_reboot && it->gpu == gpu)
        return fmt::format("reboot   # {} {} since boot{}: a GPU reset cannot recover it",
                           it->kind == "xid" ? "Xid" : it->kind, it->code,
                           it->name ? " (" + *it->name + ")" : std::string());
  return reset_command(s, gpu);
}

}  // namespace gpureap::doctor
