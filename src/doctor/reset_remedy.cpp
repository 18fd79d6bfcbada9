#include "doctor/reset_remedy.h"

#include <fmt/format.h>

#include "backend/registry.h"

namespace gpureap::doctor {

std::string reset_command(const core::Snapshot& s, unsigned gpu,
                          const std::vector<backend::BackendEntry>* backends) {
  const core::Gpu* g = s.gpu(gpu);
  if (!g) return fmt::format("gpureap reset --gpu {}", gpu);
  const auto* entry = backend::find_backend(g->backend, backends);
  std::string command =
      entry ? backend::fill_gpu(entry->words.reset, gpu, g->minor) : std::string();
  return command.empty() ? "reboot" : command;
}

std::string reset_command(const core::Snapshot& s, unsigned gpu, const core::KernelLog* kernel,
                          const std::vector<backend::BackendEntry>* backends) {
  if (kernel)
    for (auto it = kernel->events.rbegin(); it != kernel->events.rend(); ++it)
      if (it->needs_reboot && it->gpu == gpu && it->stamp != core::KernelStamp::Future)
        return fmt::format("reboot   # {} since boot{}: a GPU reset cannot recover it",
                           it->code_text(), it->name ? " (" + *it->name + ")" : std::string());
  return reset_command(s, gpu, backends);
}

}  // namespace gpureap::doctor
