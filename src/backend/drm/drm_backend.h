#pragma once
// GPUs the kernel's DRM drivers run (AMD's amdgpu, Intel's i915 and xe), read from the kernel's
// own files: sysfs for the devices and their totals, each holder's fdinfo for its memory per
// region, and for AMD, KFD's process list. No vendor library is called, so it needs no
// watchdog; it takes part in the holder scan (ClientTable) instead of walking /proc itself.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backend/drm/client_table.h"
#include "backend/drm/kfd.h"
#include "backend/drm/pci_ids.h"
#include "backend/drm/sysfs_devices.h"
#include "backend/gpu_backend.h"
#include "backend/registry.h"
#include "backend/settings.h"

namespace gpureap::backend::drm {

// The GPUs one backend entry reports: the drivers it reads, and whether KFD lists their
// processes too.
struct DrmFamily {
  std::string name;    // "amdgpu", "intel"
  std::string vendor;  // "amd", "intel"
  std::set<std::string> drivers;
  bool kfd = false;
  std::string label;  // how users name these GPUs in messages: "AMD"
};

class DrmBackend final : public GpuBackend {
 public:
  DrmBackend(DrmFamily family, const BackendSettings& settings);

  core::BackendReport collect() override;
  procfs::FdObserver* fd_observer() override { return &observer_; }

 private:
  // Before each scan the observer learns which nodes are this family's (sysfs is cheap to read).
  class Observer final : public procfs::FdObserver {
   public:
    explicit Observer(DrmBackend& owner) : owner_(owner) {}
    void scan_started() override;
    void observe(const procfs::GpuFd& fd) override { owner_.clients_.observe(fd); }
    void scan_finished() override { owner_.clients_.scan_finished(); }
    void open_files_grouped(const std::vector<core::HostProcess>& processes,
                            const std::optional<std::string>& unknown) override {
      owner_.clients_.open_files_grouped(processes, unknown);
    }

   private:
    DrmBackend& owner_;
  };

  std::vector<DrmDevice> devices(DrmDevices& all) const;
  core::Gpu gpu_of(const DrmDevice& device, unsigned index, const KfdReading& kfd,
                   const std::vector<ObservedClient>& clients) const;
  // The device's name from the PCI ID database ("AMD Radeon RX 6900 XT"), looked up once per
  // device and kept: the file is a megabyte, read only when a new device needs a name.
  std::optional<std::string> database_name(const DrmDevice& device);

  using PciKey = std::tuple<unsigned, unsigned, unsigned, unsigned>;
  std::map<PciKey, std::optional<std::string>> names_;
  // The database last looked in (its path), or none when no file was there.
  std::optional<std::optional<std::string>> pci_ids_path_;

  DrmFamily family_;
  BackendSettings settings_;
  ClientTable clients_;
  Observer observer_{*this};
};

// The built-in DRM families, as registry entries.
// dri/renderD<N> and dri/card<N>, the DRM nodes every DRM vendor's GPUs have.
procfs::DeviceNodes drm_nodes();
BackendEntry amd_entry();
BackendEntry intel_entry();

}  // namespace gpureap::backend::drm
