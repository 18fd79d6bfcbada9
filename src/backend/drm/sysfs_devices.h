#pragma once
// The DRM GPUs the kernel exposes under <sys-root>/class/drm: one entry per PCI device, with the
// device numbers of its card and render nodes and the totals its driver publishes in sysfs.
// Intel publishes less than amdgpu: a figure the driver does not publish stays empty.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpureap::backend::drm {

struct DrmDevice {
  std::string pci_address;             // "0000:03:00.0"
  std::optional<std::string> driver;   // "amdgpu", "i915", "xe": the device's bound driver
  std::optional<unsigned> pci_vendor;  // device/vendor (0x1002 AMD, 0x8086 Intel)
  std::optional<unsigned> pci_device;  // device/device
  std::optional<unsigned> pci_subsystem_vendor;  // device/subsystem_vendor: the board's maker
  std::optional<unsigned> pci_subsystem_device;  // device/subsystem_device: the board
  std::string vendor;                            // "amd", "intel", "nvidia", else "pci-0x<vendor>"
  std::optional<std::string> name;               // device/product_name where the driver gives one
  std::optional<unsigned> card_minor;            // card<N>
  std::optional<unsigned> render_minor;          // renderD<N>
  std::vector<dev_t> device_numbers;             // from card<N>/dev and renderD<N>/dev ("226:0")
  std::optional<uint64_t> memory_total_bytes;    // amdgpu mem_info_vram_total; xe tile VRAM size
  std::optional<uint64_t> memory_used_bytes;     // amdgpu mem_info_vram_used
  std::optional<unsigned> busy_percent;          // gpu_busy_percent
  std::optional<unsigned> temperature_celsius;   // hwmon temp1_input (m°C)
  std::optional<double> power_watts;             // hwmon power1_average, else power1_input (µW)
};

struct DrmDevices {
  bool present = false;               // <sys-root>/class/drm exists
  std::vector<DrmDevice> devices;     // by PCI address
  std::vector<std::string> warnings;  // what could not be read, per device
};

// Every PCI DRM device, its card and render nodes merged; connectors (card0-DP-1), virtual
// devices without a PCI parent and unreadable files are skipped (a warning for the latter).
DrmDevices read_drm_devices(const std::string& sys_root);

}  // namespace gpureap::backend::drm
