#include "backend/nvml/drm_nodes.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "backend/drm/sysfs_devices.h"
#include "kernel/pci_address.h"

namespace gpureap::backend::nvml {
namespace {

// The driver nvidia.ko registers for the GPUs' PCI functions; nvidia-drm's nodes hang there.
constexpr std::string_view kNvidiaDriver = "nvidia";

// One form for NVML's bus id ("00000000:17:00.0") and sysfs's ("0000:17:00.0"): the
// normalized domain, bus and device, and the function (a GPU's audio function is another).
std::optional<std::string> pci_function_key(std::string_view text) {
  const size_t dot = text.rfind('.');
  if (dot == std::string_view::npos || dot + 2 != text.size()) return std::nullopt;
  const char function = text[dot + 1];
  if (function < '0' || function > '7') return std::nullopt;
  auto device = kernel::normalize_pci_address(text.substr(0, dot));
  if (!device) return std::nullopt;
  return *device + "." + function;
}

}  // namespace

void attach_drm_nodes(std::vector<core::Gpu>& gpus, const std::string& sys_root) {
  if (std::none_of(gpus.begin(), gpus.end(),
                   [](const core::Gpu& g) { return g.pci_bus_id && !g.device_numbers.empty(); }))
    return;
  // What the file reader warns of is the DRM backends' to say; they read the same tree.
  const drm::DrmDevices drm = drm::read_drm_devices(sys_root);
  for (const drm::DrmDevice& device : drm.devices) {
    if (device.driver != kNvidiaDriver || device.device_numbers.empty()) continue;
    const auto key = pci_function_key(device.pci_address);
    if (!key) continue;
    for (core::Gpu& gpu : gpus) {
      if (!gpu.pci_bus_id || gpu.device_numbers.empty() || pci_function_key(*gpu.pci_bus_id) != key)
        continue;
      for (dev_t number : device.device_numbers) {
        if (std::find(gpu.device_numbers.begin(), gpu.device_numbers.end(), number) !=
            gpu.device_numbers.end())
          continue;
        gpu.device_numbers.push_back(number);
        gpu.display_device_numbers.push_back(number);
      }
    }
  }
}

}  // namespace gpureap::backend::nvml
