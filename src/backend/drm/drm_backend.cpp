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

// The version of the kernel module that drives `driver` (a driver built out of the kernel tree,
// as AMD's DKMS amdgpu is, writes <sys-root>/module/<driver>/version), else none: an in-tree
// driver is the kernel's own.
std::optional<std::string> module_version(const std::string& sys_root, const std::string& driver) {
  auto f = procfs::read_file(sys_root + "/module/" + driver + "/version", 256);
  if (!f.ok()) return std::nullopt;
  std::string s = f.data.substr(0, f.data.find('\n'));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
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

std::optional<std::string> DrmBackend::database_name(const DrmDevice& device) {
  if (!device.pci_vendor || !device.pci_device) return std::nullopt;
  PciId id{*device.pci_vendor, *device.pci_device, device.pci_subsystem_vendor,
           device.pci_subsystem_device};
  PciKey key{id.vendor, id.device, id.subsystem_vendor.value_or(0),
             id.subsystem_device.value_or(0)};
  if (auto known = names_.find(key); known != names_.end()) return known->second;
  std::optional<std::string> name;
  auto file = read_pci_ids(host_root(settings_));
  pci_ids_path_ = file ? std::optional<std::string>(file->path) : std::nullopt;
  if (file) {
    PciName found = lookup_pci_name(file->text, id);
    // The board when the database knows this subsystem ("Radeon RX 6900 XT"), else the chip
    // ("Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]"); the vendor's name first unless there.
    if (auto n = found.subsystem ? found.subsystem : found.device)
      name = n->find(family_.label) == std::string::npos ? family_.label + " " + *n : *n;
  }
  names_.emplace(key, name);
  return name;
}

core::BackendReport DrmBackend::collect() {
  core::BackendReport report;
  report.name = family_.name;
  report.vendor = family_.vendor;
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
  // The driver's version: its module's when it has one, else the kernel's release.
  for (const auto& d : mine)
    if (d.driver && !report.driver_version)
      if ((report.driver_version = module_version(settings_.sys_root, *d.driver)))
        report.set_detail("driver_version_of", "module " + *d.driver);
  if (!report.driver_version && (report.driver_version = kernel_release(settings_.proc_root)))
    report.set_detail("driver_version_of", "kernel");
  for (unsigned i = 0; i < mine.size(); ++i) {
    report.gpus.push_back(gpu_of(mine[i], i, kfd, clients));
    if (!mine[i].name)
      if (auto name = database_name(mine[i])) report.gpus.back().name = std::move(name);
  }
  // Where names came from when one was needed: the database's path, or "none" (the names are
  // then the PCI ids, "AMD 0x73bf"; install pci.ids or hwdata).
  if (pci_ids_path_) report.set_detail("pci_ids", pci_ids_path_->value_or("none"));
  return report;
}

procfs::DeviceNodes drm_nodes() {
  procfs::DeviceNode render{kDrmRenderKind, "dri", "renderD", true, true};
  render.major = kDrmMajor;
  render.min_minor = 128;
  procfs::DeviceNode card{kDrmCardKind, "dri", "card", true, true};
  card.major = kDrmMajor;
  card.max_minor = 127;
  return {render, card};
}

BackendEntry amd_entry() {
  BackendEntry e;
  e.name = "amdgpu";
  e.vendor = "amd";
  e.calls_driver_library = false;
  e.make = [](const BackendSettings& s) {
    return std::make_unique<DrmBackend>(DrmFamily{"amdgpu", "amd", {"amdgpu"}, true, "AMD"}, s);
  };
  e.device_nodes = drm_nodes();
  // /dev/kfd: AMD's compute driver, one node for every AMD GPU. Its major is given at module
  // load: the node's own MAJ:MIN in sysfs, else the major /proc/devices lists for "kfd".
  procfs::DeviceNode kfd{"kfd", "", "kfd", false, true, true};
  kfd.sys_dev_file = "class/kfd/kfd/dev";
  kfd.devices_name = "kfd";
  kfd.minor = 0;
  kfd.trust_name = true;
  e.device_nodes.push_back(kfd);
  e.words.vendor = "AMD";
  // amdgpu's reset is asked through debugfs.
  e.words.reset = "sudo cat /sys/kernel/debug/dri/{minor}/amdgpu_gpu_recover";
  // RCCL, AMD's port of NCCL, keeps NCCL's shared buffers ("/dev/shm/nccl-XXXXXX").
  e.shm_files = {{"RCCL", "nccl-[A-Za-z0-9]{6}"}};
  return e;
}

BackendEntry intel_entry() {
  BackendEntry e;
  e.name = "intel";
  e.vendor = "intel";
  e.calls_driver_library = false;
  e.make = [](const BackendSettings& s) {
    return std::make_unique<DrmBackend>(DrmFamily{"intel", "intel", {"i915", "xe"}, false, "Intel"},
                                        s);
  };
  e.device_nodes = drm_nodes();
  e.words.vendor = "Intel";  // i915 and xe offer no reset a user should reach for before a reboot
  return e;
}

}  // namespace gpureap::backend::drm
