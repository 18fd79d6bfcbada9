#include "procfs/device_files.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "procfs/dir_entries.h"
#include "procfs/file_read.h"
#include "procfs/parsers.h"
#include "procfs/resource_shortage.h"

namespace gpureap::procfs {
namespace {

// A sysfs "dev" file: "MAJ:MIN\n". `shortage`: set to the errno where gpureap itself ran
// short of file descriptors or memory reading it (the number is then unknown, not absent).
std::optional<dev_t> read_dev_file(const std::string& path, int& shortage) {
  auto dev = read_file(path);
  if (is_resource_shortage(dev.error)) shortage = dev.error;
  unsigned major = 0, minor = 0;
  if (dev.ok() && std::sscanf(dev.data.c_str(), "%u:%u", &major, &minor) == 2)
    return ::makedev(major, minor);
  return std::nullopt;
}

// The sys file of a numbered node, "{n}" replaced with its number.
std::string per_node(std::string pattern, unsigned n) {
  auto at = pattern.find("{n}");
  if (at != std::string::npos) pattern.replace(at, 3, std::to_string(n));
  return pattern;
}

bool per_node_sys_file(const DeviceNode& node) {
  return node.numbered && node.sys_dev_file.find("{n}") != std::string::npos;
}

std::string node_path(const std::string& dev_root, const DeviceNode& node) {
  return dev_root + (node.folder.empty() ? "" : "/" + node.folder) + "/" + node.name;
}

}  // namespace

std::optional<dev_t> GpuDeviceFile::number() const {
  if (is_char_device) return rdev;
  return assigned;
}

core::Result<DeviceCatalog> DeviceCatalog::enumerate(const DeviceNodes& nodes,
                                                     const std::string& dev_root,
                                                     const std::string& proc_root,
                                                     const std::string& sys_root) {
  struct stat root_st {};
  if (::stat(dev_root.c_str(), &root_st) != 0 || !S_ISDIR(root_st.st_mode))
    return core::Error{"dev root " + dev_root + " is not a readable directory",
                       "pass an existing directory with --dev-root"};
  DeviceCatalog cat;
  cat.dev_root_ = dev_root;
  // A file gpureap could not read for want of a resource would leave GPU files out of the
  // catalogue unsaid, and every holder of them with it: the catalogue fails instead.
  int shortage = 0;
  auto devices = read_file(proc_root + "/devices");
  if (is_resource_shortage(devices.error)) shortage = devices.error;
  for (const auto& node : nodes) {
    Resolved r{node, std::nullopt, std::nullopt};
    if (!node.sys_dev_file.empty() && !per_node_sys_file(node))
      if (auto n = read_dev_file(sys_root + "/" + node.sys_dev_file, shortage)) {
        r.major = ::major(*n);
        r.number = n;
      }
    if (!r.major) r.major = node.major;
    if (!r.major && !node.devices_name.empty() && devices.ok())
      r.major = parse_char_major(devices.data, node.devices_name);
    if (!r.number && !node.numbered && r.major && node.minor)
      r.number = ::makedev(*r.major, *node.minor);
    cat.nodes_.push_back(std::move(r));
  }

  auto add = [&](const std::string& path, Resolved& r, std::optional<unsigned> minor) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;
    GpuDeviceFile f{path, r.node.kind, minor};
    f.reaches = r.node.reaches_gpus;
    std::optional<dev_t> own;  // the node's own number from sysfs
    if (per_node_sys_file(r.node) && minor) {
      own = read_dev_file(sys_root + "/" + per_node(r.node.sys_dev_file, *minor), shortage);
      if (own && !r.major) r.major = ::major(*own);
    }
    if (S_ISCHR(st.st_mode)) {
      bool expected = own                            ? st.st_rdev == *own
                      : r.number && !r.node.numbered ? st.st_rdev == *r.number
                      : r.major                      ? ::major(st.st_rdev) == *r.major
                                                     : r.node.trust_name;
      if (!expected) return;  // same name, another driver: not a GPU device
      f.is_char_device = true;
      f.rdev = st.st_rdev;
    } else if (S_ISREG(st.st_mode)) {
      f.dev = st.st_dev;
      f.ino = st.st_ino;
      if (own)
        f.assigned = own;
      else if (!r.node.numbered)
        f.assigned = r.number;
      else if (r.major && minor)
        f.assigned = ::makedev(*r.major, *minor);
    } else {
      return;
    }
    cat.files_.push_back(std::move(f));
  };
  // Each folder once, in the order the nodes first name it; exact names before numbered ones.
  std::vector<std::string> folders;
  for (const auto& r : cat.nodes_)
    if (std::find(folders.begin(), folders.end(), r.node.folder) == folders.end())
      folders.push_back(r.node.folder);
  for (const auto& folder : folders) {
    std::string dir = folder.empty() ? dev_root : dev_root + "/" + folder;
    auto names = list_existing_dir(dir);
    if (!names)
      return core::Error{"cannot find the GPU device files: " + names.error().message,
                         names.error().hint};
    for (const auto& name : *names) {
      Resolved* found = nullptr;
      std::optional<unsigned> minor;
      for (auto& r : cat.nodes_)
        if (r.node.folder == folder && !r.node.numbered && name == r.node.name) {
          found = &r;
          break;
        }
      if (!found)
        for (auto& r : cat.nodes_)
          if (r.node.folder == folder && r.node.numbered)
            if ((minor = number_suffix(name, r.node.name))) {
              found = &r;
              break;
            }
      if (found) add(dir + "/" + name, *found, minor);
    }
  }
  if (shortage)
    return core::Error{"cannot find the GPU device files: reading the device numbers under " +
                           proc_root + " and " + sys_root + " failed: " + std::strerror(shortage),
                       shortage_remedy(shortage)};
  return cat;
}

std::vector<std::string> DeviceCatalog::drivers_present() const {
  std::vector<std::string> out;
  for (const auto& f : files_)
    for (const auto& r : nodes_)
      if (r.node.kind == f.kind && r.node.shows_driver &&
          std::find(out.begin(), out.end(), r.node.backend) == out.end())
        out.push_back(r.node.backend);
  return out;
}

bool DeviceCatalog::may_match(std::string_view link) const {
  // Device files are never sockets/pipes/anon inodes; the link text of a device node names
  // its path in the holder's mount namespace, whose basename still is the driver's name.
  if (link.empty() || link.front() != '/') return false;
  std::string_view base = link.substr(link.rfind('/') + 1);
  if (base.ends_with(" (deleted)")) base.remove_suffix(10);
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const Resolved& r) {
    return r.node.numbered ? base.starts_with(r.node.name) : base == r.node.name;
  });
}

std::optional<GpuDeviceFile> DeviceCatalog::match(const struct stat& st) const {
  bool chr = S_ISCHR(st.st_mode);
  for (const auto& f : files_) {
    if (chr && f.is_char_device && f.rdev == st.st_rdev) return f;
    if (!chr && !f.is_char_device && f.dev == st.st_dev && f.ino == st.st_ino) return f;
  }
  if (!chr) return std::nullopt;
  return name_by_number(st);
}

std::optional<GpuDeviceFile> DeviceCatalog::name_by_number(const struct stat& st) const {
  // A GPU node the dev root lacks (the holder's /dev differs from ours): name it by number,
  // but only when the dev root itself has nodes of that driver, so a dev root of stand-in
  // files never reports the machine's real devices.
  unsigned major = ::major(st.st_rdev), minor = ::minor(st.st_rdev);
  bool root_has_major = std::any_of(files_.begin(), files_.end(), [&](const GpuDeviceFile& f) {
    return f.is_char_device && ::major(f.rdev) == major;
  });
  if (!root_has_major) return std::nullopt;
  auto file = [&](const Resolved& r, std::optional<unsigned> m) {
    GpuDeviceFile f{node_path(dev_root_, r.node) + (m ? std::to_string(*m) : ""), r.node.kind, m,
                    true, st.st_rdev};
    f.reaches = r.node.reaches_gpus;
    return f;
  };
  // A node with a number of its own first (a control file beside numbered GPU nodes), then
  // the first whose major and minors fit.
  for (const auto& r : nodes_)
    if (!r.node.numbered && r.number && *r.number == st.st_rdev) return file(r, std::nullopt);
  for (const auto& r : nodes_) {
    if (!r.major || *r.major != major || minor < r.node.min_minor || minor > r.node.max_minor)
      continue;
    if (r.node.numbered) return file(r, minor);
    if (!r.number) return file(r, std::nullopt);
  }
  return std::nullopt;
}

}  // namespace gpureap::procfs
