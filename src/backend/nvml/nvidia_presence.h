#pragma once
// Whether this machine has NVIDIA hardware at all, from the kernel's view: an NVIDIA device
// node (/dev/nvidiactl, /dev/nvidia<N>) under the dev root, or an NVIDIA display controller
// (PCI vendor 0x10de, class 0x03) under the sysfs root. On a machine with neither (only AMD or
// Intel GPUs), NVML's absence is no news: the backend reports "no device", which no view shows
// unless asked, instead of an error about a library nobody needs.
#include <string>

namespace gpureap::backend::nvml {

bool nvidia_device_node_exists(const std::string& dev_root);
bool nvidia_pci_display_exists(const std::string& sys_root);

}  // namespace gpureap::backend::nvml
