#pragma once
// The DRM nodes nvidia-drm gives each NVIDIA GPU when it runs with modeset=1 (the default of
// current distributions, and what Wayland needs): /dev/dri/card<N> and /dev/dri/renderD<N>,
// char major 226. A compositor, a GBM or EGL client, or a process that kept only that fd holds
// one: it uses the GPU and a reset would end its work, yet NVML never lists it. sysfs ties each
// node to its PCI function (<sys-root>/class/drm/<node>/device, bound to the nvidia driver)
// and NVML names each GPU's PCI bus id: the nodes are joined to the GPU by that address.
#include <string>
#include <vector>

#include "core/gpu.h"

namespace gpureap::backend::nvml {

// Adds to each GPU the device numbers (from sysfs's card<N>/dev and renderD<N>/dev) of the DRM
// nodes whose PCI device is the GPU's and is bound to the nvidia driver, in device_numbers and
// in display_device_numbers. A GPU whose own node is unknown (no minor, so any /dev/nvidia<N>
// may reach it) is left as it is: a list of numbers would stop the others from reaching it. No
// <sys-root>/class/drm, or no node of the GPU there (nvidia-drm not loaded, or without modeset):
// nothing added.
void attach_drm_nodes(std::vector<core::Gpu>& gpus, const std::string& sys_root);

}  // namespace gpureap::backend::nvml
