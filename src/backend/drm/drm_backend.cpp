#include "backend/drm/drm_backend.h"

#include <algorithm>
#include <cstdio>

#include "backend/drm/gpu_processes.h"
#include "procfs/file_read.h"

namespace gpureap::backend::drm {
namespace {

std::optional<std::string> kernel_release(const std::string& proc_root) {
  auto f = procfs::read_file(proc_root + "/sys/kernel/osrelease", 256);
  if (!f.ok()) return std::nullopt;
  std::string s = f.data.substr(0, f.data.find('\n'));
  if (s.empty()) return std::nullopt;
  return s;
}

std::optional<unsigned> kfd_gpu_id(const DrmDevice& device, const KfdReading& kfd) {
  for (const auto& n : kfd.nodes)
    if (n.pci_address && *n.pci_address == device.pci_address) return n.gpu_id;
  return std::nullopt;
}

std::string hex_id(unsigned id) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", id);
  return buf;
}

void append(std::vector<std::string>& into, const std::vector<std::string>& more) {
  into.insert(into.end(), more.begin(), more.end());
}

}  // namespace

DrmBackend::DrmBackend(DrmFamily family, const BackendSettings& settings)
    : family_(std::move(family)), settings_(settings), clients_(settings.proc_root) {}

std::vector<DrmDevice> DrmBackend::devices(DrmDevices& all) const {
  std::vector<DrmDevice> out;
  for (auto& d : all.devices)
    if (d.driver && family_.drivers.count(*d.driver)) out.push_back(std::move(d));
  return out;
}

void DrmBackend::Observer::scan_started() {
  auto all = read_drm_devices(owner_.settings_.sys_root);
  std::set<dev_t> nodes;
  for (const auto& d : owner_.devices(all))
    nodes.insert(d.device_numbers.begin(), d.device_numbers.end());
  owner_.clients_.watch(std::move(nodes));
  owner_.clients_.scan_started();
}

core::Gpu DrmBackend::gpu_of(const DrmDevice& device, unsigned index, const KfdReading& kfd,
                             const std::vector<ObservedClient>& clients) const {
  core::Gpu gpu;
  gpu.index = index;
  gpu.vendor = device.vendor;
  gpu.name = device.name;
  if (!gpu.name && device.pci_device) gpu.name = family_.label + " " + hex_id(*device.pci_device);
  gpu.pci_bus_id = device.pci_address;
  gpu.minor = device.card_minor;
  gpu.device_numbers = device.device_numbers;
  gpu.memory.total_bytes = device.memory_total_bytes;
  gpu.memory.used_bytes = device.memory_used_bytes;
  if (device.memory_total_bytes && device.memory_used_bytes &&
      *device.memory_used_bytes <= *device.memory_total_bytes)
    gpu.memory.free_bytes = *device.memory_total_bytes - *device.memory_used_bytes;
  gpu.utilization_percent = device.busy_percent;
  gpu.temperature_celsius = device.temperature_celsius;
  gpu.power_watts = device.power_watts;
  if (device.driver) gpu.details.emplace_back("driver", *device.driver);
  if (device.render_minor)
    gpu.details.emplace_back("render_node", "renderD" + std::to_string(*device.render_minor));
  auto gpu_id = family_.kfd ? kfd_gpu_id(device, kfd) : std::nullopt;
  if (gpu_id) {
    gpu.details.emplace_back("kfd_gpu_id", std::to_string(*gpu_id));
    // /dev/kfd reaches every AMD GPU KFD runs.
    if (kfd.device) gpu.device_numbers.push_back(*kfd.device);
  }
  gpu.processes = gpu_processes(device, clients, kfd, gpu_id);
  return gpu;
}

core::BackendReport DrmBackend::collect() {
  core::BackendReport report;
  report.name = family_.name;
  report.vendor = family_.vendor;
  report.driver_version = kernel_release(settings_.proc_root);
  auto all = read_drm_devices(settings_.sys_root);
  append(report.warnings, all.warnings);
  auto mine = devices(all);
  if (mine.empty()) {
    report.error_code = core::BackendErrorCode::NoDevice;
    report.error = all.present ? "no " + family_.label + " GPU: " + settings_.sys_root +
                                     "/class/drm lists none"
                               : settings_.sys_root +
                                     "/class/drm is missing: no DRM GPU is "
                                     "visible (mount sysfs, or pass --sys-root)";
    return report;
  }
  report.available = true;
  KfdReading kfd;
  if (family_.kfd) {
    kfd = read_kfd(settings_.sys_root);
    append(report.warnings, kfd.warnings);
    report.set_detail("kfd", kfd.present ? "yes" : "no");
  }
  auto clients = clients_.current();
  append(report.warnings, clients_.errors());
  report.set_detail("drm_clients", std::to_string(clients.size()));
  for (unsigned i = 0; i < mine.size(); ++i)
    report.gpus.push_back(gpu_of(mine[i], i, kfd, clients));
  return report;
}

BackendEntry amd_entry() {
  return {
      "amdgpu", "amd", false, [](const BackendSettings& s) {
        return std::make_unique<DrmBackend>(DrmFamily{"amdgpu", "amd", {"amdgpu"}, true, "AMD"}, s);
      }};
}

BackendEntry intel_entry() {
  return {"intel", "intel", false, [](const BackendSettings& s) {
            return std::make_unique<DrmBackend>(
                DrmFamily{"intel", "intel", {"i915", "xe"}, false, "Intel"}, s);
          }};
}

}  // namespace gpureap::backend::drm
