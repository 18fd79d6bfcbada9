#include "core/gpu_index.h"

#include <algorithm>

namespace gpureap::core {

std::optional<ScopeError> check_gpu_index(const Snapshot& s, unsigned index) {
  if (s.gpu(index)) return std::nullopt;
  const std::string gpu = "GPU " + std::to_string(index);
  // A driver that is down names no GPU, unless its kernel module still described them all.
  const BackendStatus* down = nullptr;
  for (const auto& b : s.drivers.backends)
    if (!b.available && b.error_code != BackendErrorCode::NoDevice &&
        std::none_of(s.drivers.gpus.begin(), s.drivers.gpus.end(),
                     [&](const Gpu& g) { return g.backend == b.name; }))
      down = down ? down : &b;
  if (down) {
    std::string why = down->error.value_or("it is not available");
    return ScopeError{
        {"cannot tell which device files are " + gpu + ": the " + down->label() +
             " driver did not answer (" + why + "), and the kernel names no " + gpu,
         "gpureap does not guess a GPU from its index; name the PIDs to act on (`gpureap ps` "
         "lists them), or try again once the driver answers"},
        true};
  }
  size_t n = s.drivers.gpus.size();
  std::string have = n == 0   ? "this machine has no GPU that gpureap can read"
                     : n == 1 ? "this machine has 1 GPU, GPU 0"
                              : "this machine has " + std::to_string(n) + " GPUs, 0 to " +
                                    std::to_string(s.drivers.gpus.back().index);
  return ScopeError{{gpu + " does not exist", have + "; `gpureap ps` lists them"}, false};
}

std::optional<std::string> gpu_identity_source(const Gpu& gpu) {
  if (!gpu.known_from_kernel) return std::nullopt;
  return "GPU " + std::to_string(gpu.index) + " is " + gpu.pci_bus_id.value_or("?") +
         (gpu.minor ? " (device minor " + std::to_string(*gpu.minor) + ")" : std::string()) +
         " by " + *gpu.known_from_kernel + ": its driver did not answer";
}

}  // namespace gpureap::core
