#include "procfs/device_files.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdio>

#include "procfs/dir_entries.h"
#include "procfs/file_read.h"
#include "procfs/parsers.h"

namespace gpureap::procfs {
namespace {

constexpr unsigned kNvidiaMajor = 195;
constexpr unsigned kDrmMajor = 226;
constexpr unsigned kNvidiaCtlMinor = 255;
constexpr unsigned kNvidiaModesetMinor = 254;

struct Classified {
  DeviceKind kind;
  std::optional<unsigned> minor;
};

std::optional<Classified> classify_nvidia(std::string_view name) {
  if (name == "nvidiactl") return Classified{DeviceKind::NvidiaCtl, std::nullopt};
  if (name == "nvidia-uvm") return Classified{DeviceKind::NvidiaUvm, std::nullopt};
  if (name == "nvidia-uvm-tools") return Classified{DeviceKind::NvidiaUvmTools, std::nullopt};
  if (name == "nvidia-modeset") return Classified{DeviceKind::NvidiaModeset, std::nullopt};
  if (auto m = number_suffix(name, "nvidia")) return Classified{DeviceKind::NvidiaGpu, m};
  return std::nullopt;
}

std::optional<Classified> classify_kfd(std::string_view name) {
  if (name == "kfd") return Classified{DeviceKind::Kfd, std::nullopt};
  return std::nullopt;
}

// /dev/kfd's number: its major is given at module load, so it is read from sysfs (the node's
// own MAJ:MIN), else from the major that /proc/devices lists for "kfd" (minor 0).
std::optional<dev_t> kfd_number(const std::string& sys_root, const std::string& devices) {
  auto dev = read_file(sys_root + "/class/kfd/kfd/dev");
  unsigned major = 0, minor = 0;
  if (dev.ok() && std::sscanf(dev.data.c_str(), "%u:%u", &major, &minor) == 2)
    return ::makedev(major, minor);
  if (auto m = parse_char_major(devices, "kfd")) return ::makedev(*m, 0);
  return std::nullopt;
}

std::optional<Classified> classify_dri(std::string_view name) {
  if (auto m = number_suffix(name, "renderD")) return Classified{DeviceKind::DrmRender, m};
  if (auto m = number_suffix(name, "card")) return Classified{DeviceKind::DrmCard, m};
  return std::nullopt;
}

}  // namespace

std::optional<dev_t> GpuDeviceFile::number() const {
  if (is_char_device) return rdev;
  switch (kind) {
    case DeviceKind::NvidiaGpu:
      return minor ? std::optional<dev_t>(::makedev(kNvidiaMajor, *minor)) : std::nullopt;
    case DeviceKind::NvidiaCtl:
      return ::makedev(kNvidiaMajor, kNvidiaCtlMinor);
    case DeviceKind::NvidiaModeset:
      return ::makedev(kNvidiaMajor, kNvidiaModesetMinor);
    case DeviceKind::DrmRender:
    case DeviceKind::DrmCard:
      return minor ? std::optional<dev_t>(::makedev(kDrmMajor, *minor)) : std::nullopt;
    case DeviceKind::Kfd:
      return assigned;
    case DeviceKind::NvidiaUvm:
    case DeviceKind::NvidiaUvmTools:
      return std::nullopt;  // a dynamic major, known only for a real node
  }
  return std::nullopt;
}

bool GpuDeviceFile::reaches_gpus() const {
  return kind == DeviceKind::NvidiaGpu || kind == DeviceKind::DrmRender ||
         kind == DeviceKind::DrmCard || kind == DeviceKind::Kfd;
}

const char* to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::NvidiaGpu:
      return "nvidia";
    case DeviceKind::NvidiaCtl:
      return "nvidiactl";
    case DeviceKind::NvidiaUvm:
      return "nvidia-uvm";
    case DeviceKind::NvidiaUvmTools:
      return "nvidia-uvm-tools";
    case DeviceKind::NvidiaModeset:
      return "nvidia-modeset";
    case DeviceKind::DrmRender:
      return "drm-render";
    case DeviceKind::DrmCard:
      return "drm-card";
    case DeviceKind::Kfd:
      return "kfd";
  }
  return "?";
}

core::Result<DeviceCatalog> DeviceCatalog::enumerate(const std::string& dev_root,
                                                     const std::string& proc_root,
                                                     const std::string& sys_root) {
  struct stat root_st {};
  if (::stat(dev_root.c_str(), &root_st) != 0 || !S_ISDIR(root_st.st_mode))
    return core::Error{"dev root " + dev_root + " is not a readable directory",
                       "pass an existing directory with --dev-root"};
  DeviceCatalog cat;
  cat.dev_root_ = dev_root;
  auto devices = read_file(proc_root + "/devices");
  if (devices.ok()) cat.uvm_major_ = parse_char_major(devices.data, "nvidia-uvm");
  cat.kfd_ = kfd_number(sys_root, devices.ok() ? devices.data : std::string());

  auto add = [&](const std::string& path, Classified c) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;
    GpuDeviceFile f{path, c.kind, c.minor};
    if (S_ISCHR(st.st_mode)) {
      unsigned major = ::major(st.st_rdev);
      bool uvm = c.kind == DeviceKind::NvidiaUvm || c.kind == DeviceKind::NvidiaUvmTools;
      bool drm = c.kind == DeviceKind::DrmRender || c.kind == DeviceKind::DrmCard;
      bool kfd = c.kind == DeviceKind::Kfd;
      bool expected = drm   ? major == kDrmMajor
                      : uvm ? cat.uvm_major_ && major == *cat.uvm_major_
                      : kfd ? !cat.kfd_ || st.st_rdev == *cat.kfd_
                            : major == kNvidiaMajor;
      if (!expected) return;  // same name, another driver: not a GPU device
      f.is_char_device = true;
      f.rdev = st.st_rdev;
    } else if (S_ISREG(st.st_mode)) {
      f.dev = st.st_dev;
      f.ino = st.st_ino;
      if (c.kind == DeviceKind::Kfd) f.assigned = cat.kfd_;
    } else {
      return;
    }
    cat.files_.push_back(std::move(f));
  };
  for (const auto& name : list_dir(dev_root)) {
    auto c = classify_nvidia(name);
    if (!c) c = classify_kfd(name);
    if (c) add(std::string(dev_root).append("/").append(name), *c);
  }
  for (const auto& name : list_dir(dev_root + "/dri"))
    if (auto c = classify_dri(name)) add(std::string(dev_root).append("/dri/").append(name), *c);
  return cat;
}

bool DeviceCatalog::may_match(std::string_view link) const {
  // Device files are never sockets/pipes/anon inodes; the link text of a device node names
  // its path in the holder's mount namespace, whose basename still is nvidia*/renderD*/card*.
  if (link.empty() || link.front() != '/') return false;
  std::string_view base = link.substr(link.rfind('/') + 1);
  if (base.ends_with(" (deleted)")) base.remove_suffix(10);
  return base.starts_with("nvidia") || base.starts_with("renderD") || base.starts_with("card") ||
         base == "kfd";
}

std::optional<GpuDeviceFile> DeviceCatalog::match(const struct stat& st) const {
  bool chr = S_ISCHR(st.st_mode);
  for (const auto& f : files_) {
    if (chr && f.is_char_device && f.rdev == st.st_rdev) return f;
    if (!chr && !f.is_char_device && f.dev == st.st_dev && f.ino == st.st_ino) return f;
  }
  if (!chr) return std::nullopt;
  // A GPU node the dev root lacks (the holder's /dev differs from ours): name it by number,
  // but only when the dev root itself has nodes of that driver, so a dev root of stand-in
  // files never reports the machine's real devices.
  unsigned major = ::major(st.st_rdev), minor = ::minor(st.st_rdev);
  bool root_has_major = std::any_of(files_.begin(), files_.end(), [&](const GpuDeviceFile& f) {
    return f.is_char_device && ::major(f.rdev) == major;
  });
  if (!root_has_major) return std::nullopt;
  std::string p = dev_root_;
  if (major == kNvidiaMajor) {
    if (minor == kNvidiaCtlMinor)
      return GpuDeviceFile{p + "/nvidiactl", DeviceKind::NvidiaCtl, {}, true, st.st_rdev};
    if (minor == kNvidiaModesetMinor)
      return GpuDeviceFile{p + "/nvidia-modeset", DeviceKind::NvidiaModeset, {}, true, st.st_rdev};
    return GpuDeviceFile{p + "/nvidia" + std::to_string(minor), DeviceKind::NvidiaGpu, minor, true,
                         st.st_rdev};
  }
  if (uvm_major_ && major == *uvm_major_)
    return GpuDeviceFile{p + (minor == 0 ? "/nvidia-uvm" : "/nvidia-uvm-tools"),
                         minor == 0 ? DeviceKind::NvidiaUvm : DeviceKind::NvidiaUvmTools,
                         {},
                         true,
                         st.st_rdev};
  if (kfd_ && st.st_rdev == *kfd_)
    return GpuDeviceFile{p + "/kfd", DeviceKind::Kfd, {}, true, st.st_rdev};
  if (major == kDrmMajor) {
    bool render = minor >= 128;
    return GpuDeviceFile{p + (render ? "/dri/renderD" : "/dri/card") + std::to_string(minor),
                         render ? DeviceKind::DrmRender : DeviceKind::DrmCard, minor, true,
                         st.st_rdev};
  }
  return std::nullopt;
}

}  // namespace gpureap::procfs
