#pragma once
// The figures a DRM driver publishes in its PCI device's sysfs directory: memory, load and
// the hwmon sensors. Each driver publishes its own set (amdgpu the most, xe its tiles' VRAM,
// i915 nothing), so every file is tried and one the driver lacks leaves its figure empty.
#include <string>

#include "backend/drm/sysfs_devices.h"
#include "backend/drm/sysfs_read.h"

namespace gpureap::backend::drm {

// Fills the memory, busy, temperature, power and name figures of `device` from device_dir
// (<sys-root>/class/drm/card<N>/device).
void read_device_figures(const std::string& device_dir, AttributeReader& reader, DrmDevice& device);

}  // namespace gpureap::backend::drm
