#pragma once
// The GPU device files under a dev root, and a matcher from an fd's stat to one of them. Which
// names are GPU files and how their numbers are found is data (DeviceNode), given by the
// backends' registry: this layer knows no vendor. Character devices are matched by device
// number (a fixed major, the major <proc-root>/devices lists under the driver's name, or the
// node's own MAJ:MIN in sysfs); other files (stand-ins under a temporary dev root) by device and
// inode. One matcher serves both.
#include <sys/stat.h>

#include <climits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpureap::procfs {

// One kind of device node a GPU driver makes, as its backend's registry entry describes it.
struct DeviceNode {
  std::string kind;    // the kind in reports and JSON ("drm-render"); unique in a catalogue
  std::string folder;  // under the dev root: "" (the root itself) or e.g. "dri"
  std::string name;    // the file's name, or its prefix when `numbered` (name<minor>)
  bool numbered = false;
  // It reaches GPUs (a GPU's own node), unlike a control or memory-manager file.
  bool reaches_gpus = false;
  // Its presence shows the driver is installed (doctor words a driver that does not load
  // differently on a machine that has its nodes).
  bool shows_driver = false;
  // How its device number is found, first that answers: the node's own "MAJ:MIN" in this file
  // under the sys root; a fixed major; the major <proc-root>/devices lists under this name.
  std::string sys_dev_file;
  std::optional<unsigned> major;
  std::string devices_name;
  std::optional<unsigned> minor;  // the one minor of an unnumbered node, where fixed
  // The minors a node of this kind has, to name by number a node the dev root lacks.
  unsigned min_minor = 0;
  unsigned max_minor = UINT_MAX;
  // With no number known, a character device of this name is still taken for one.
  bool trust_name = false;
  std::string backend;  // the backend whose entry named it (set by the registry)
};
using DeviceNodes = std::vector<DeviceNode>;

struct GpuDeviceFile {
  std::string path;               // dev_root + "/" + name, ...
  std::string kind;               // DeviceNode::kind
  std::optional<unsigned> minor;  // of a numbered node: name<minor>
  bool is_char_device = false;
  dev_t rdev = 0;  // char devices
  dev_t dev = 0;   // other files
  ino_t ino = 0;
  // The number a stand-in's name gives under its driver's conventions (name<N> is MAJ:N, a
  // fixed node its own number), where the catalogue knows the major.
  std::optional<dev_t> assigned;
  bool reaches = false;  // DeviceNode::reaches_gpus

  // The device number the file stands for: st_rdev of a node, `assigned` for a stand-in.
  std::optional<dev_t> number() const;
  // It reaches GPUs (a GPU's own node, a DRM node), unlike a control or UVM file.
  bool reaches_gpus() const { return reaches; }
};

class DeviceCatalog {
 public:
  // Enumerates the device files of `nodes` under dev_root. A missing dev root is an error; an
  // empty catalogue (no GPU driver) is not. The proc and sys roots give dynamic majors.
  static core::Result<DeviceCatalog> enumerate(const DeviceNodes& nodes,
                                               const std::string& dev_root,
                                               const std::string& proc_root,
                                               const std::string& sys_root = "/sys");

  const std::vector<GpuDeviceFile>& files() const { return files_; }
  const std::string& dev_root() const { return dev_root_; }
  // The backends (DeviceNode::backend) of whose nodes that show a driver the dev root has one.
  std::vector<std::string> drivers_present() const;

  // Cheap filter on an fd's link text, before any stat: can it be a GPU device file?
  bool may_match(std::string_view link_text) const;
  // The device file an fd refers to (index into files()), or a synthesized entry for a GPU
  // character device that has no node under the dev root (e.g. inside a container's /dev).
  std::optional<GpuDeviceFile> match(const struct stat& st) const;

 private:
  struct Resolved {
    DeviceNode node;
    std::optional<unsigned> major;
    std::optional<dev_t> number;  // an unnumbered node's whole number, where known
  };
  std::optional<GpuDeviceFile> name_by_number(const struct stat& st) const;

  std::vector<Resolved> nodes_;
  std::vector<GpuDeviceFile> files_;
  std::string dev_root_;
};

}  // namespace gpureap::procfs
