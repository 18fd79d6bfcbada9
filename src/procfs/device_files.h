#pragma once
// The GPU device files under a dev root, and a matcher from an fd's stat to one of them.
// Character devices are matched by device number (major 195 for nvidia, the nvidia-uvm
// major from <proc-root>/devices, 226 for DRM, kfd's from <sys-root>/class/kfd/kfd/dev or
// <proc-root>/devices); other files (stand-ins under a temporary dev root) by device and inode.
// One matcher serves both.
#include <sys/stat.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpureap::procfs {

enum class DeviceKind {
  NvidiaGpu,
  NvidiaCtl,
  NvidiaUvm,
  NvidiaUvmTools,
  NvidiaModeset,
  DrmRender,
  DrmCard,
  Kfd  // /dev/kfd: AMD's compute driver, one node for every AMD GPU
};

struct GpuDeviceFile {
  std::string path;  // dev_root + "/nvidia0", ...
  DeviceKind kind;
  std::optional<unsigned> minor;  // nvidia<minor>, renderD<minor>, card<minor>
  bool is_char_device = false;
  dev_t rdev = 0;  // char devices
  dev_t dev = 0;   // other files
  ino_t ino = 0;
  std::optional<dev_t> assigned;  // a stand-in for a node whose major is dynamic (kfd)

  // The device number the file stands for: st_rdev of a node; for a stand-in file, the number
  // its name gives under the driver's conventions (nvidia<N> is 195:N, renderD<N> 226:N, kfd
  // the number the kernel gave /dev/kfd).
  std::optional<dev_t> number() const;
  // It reaches GPUs (a GPU's own node, a DRM node), unlike a control or UVM file.
  bool reaches_gpus() const;
};

class DeviceCatalog {
 public:
  // Enumerates the GPU device files under dev_root. A missing dev root is an error; an empty
  // catalogue (no GPU driver) is not. The sys root names /dev/kfd's number.
  static core::Result<DeviceCatalog> enumerate(const std::string& dev_root,
                                               const std::string& proc_root,
                                               const std::string& sys_root = "/sys");

  const std::vector<GpuDeviceFile>& files() const { return files_; }
  const std::string& dev_root() const { return dev_root_; }

  // Cheap filter on an fd's link text, before any stat: can it be a GPU device file?
  bool may_match(std::string_view link_text) const;
  // The device file an fd refers to (index into files()), or a synthesized entry for a GPU
  // character device that has no node under the dev root (e.g. inside a container's /dev).
  std::optional<GpuDeviceFile> match(const struct stat& st) const;

 private:
  std::vector<GpuDeviceFile> files_;
  std::optional<unsigned> uvm_major_;
  std::optional<dev_t> kfd_;
  std::string dev_root_;
};

const char* to_string(DeviceKind kind);

}  // namespace gpureap::procfs
