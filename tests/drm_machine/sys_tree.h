#pragma once
// A sysfs tree under a temporary directory, for the DRM and KFD readers' tests: files and
// links written where the kernel puts them, either as the real layout (class/drm/card0 a
// link into devices/, device a link to the PCI device) or as plain directories, the way a
// copied or hand-made fixture tree has them. Both layouts must read the same.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gpureap::test {

class SysTree {
 public:
  SysTree() : owned_(true) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpureap-sys-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
  }
  // A tree in a directory someone else owns (a DrmMachine's sys/): left in place.
  explicit SysTree(std::string root) : root_(std::move(root)) {}
  ~SysTree() {
    std::error_code ec;
    if (owned_) std::filesystem::remove_all(root_, ec);
  }
  SysTree(const SysTree&) = delete;
  SysTree& operator=(const SysTree&) = delete;

  const std::string& root() const { return root_; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }

  // Writes `text` to the file `rel`, creating its directories.
  void write(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(path(rel)).parent_path());
    std::ofstream out(path(rel), std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path(rel));
  }
  void mkdir(const std::string& rel) const { std::filesystem::create_directories(path(rel)); }
  // A link at `rel` whose text is `target` (relative to the link's directory, as sysfs's are).
  void symlink(const std::string& target, const std::string& rel) const {
    std::filesystem::create_directories(std::filesystem::path(path(rel)).parent_path());
    std::filesystem::create_symlink(target, path(rel));
  }

 private:
  std::string root_;
  bool owned_ = false;
};

enum class Layout { Symlinks, PlainDirs };

// A PCI GPU and its DRM nodes.
struct PciGpu {
  std::string address;  // "0000:03:00.0"
  std::string driver;   // "amdgpu"
  std::string vendor;   // device/vendor's text: "0x1002"
  std::string device;   // device/device's text: "0x73bf"
  // The board: device/subsystem_vendor and subsystem_device ("0x1002", "0x0e3a"); not
  // written when empty.
  std::string subsystem_vendor;
  std::string subsystem_device;
  std::vector<std::pair<std::string, unsigned>> nodes;  // {"card0", 0}: dev is 226:<minor>
  std::map<std::string, std::string>
      files;  // more files of the PCI device: {"mem_info_vram_total", "17163091968\n"}
  bool slot_in_uevent = true;    // uevent has PCI_SLOT_NAME (else: the device link's name)
  bool driver_in_uevent = true;  // uevent has DRIVER (else: the driver link; Symlinks only)
  // The PCI bridge the device sits behind ("0000:00:01.0", a root port, as a discrete GPU's
  // slot has); empty: on the root bus. Symlinks only.
  std::string bridge;
  std::string pci_class = "0x030000";  // device/class: VGA; a compute GPU is 0x030200 (3D)
};

// The PCI device's own files, written under `dir`.
inline void write_pci_device_files(const SysTree& sys, const std::string& dir, const PciGpu& gpu) {
  std::string uevent;
  if (gpu.driver_in_uevent) uevent += "DRIVER=" + gpu.driver + "\n";
  uevent += "PCI_CLASS=30000\n";
  if (gpu.slot_in_uevent) uevent += "PCI_SLOT_NAME=" + gpu.address + "\n";
  sys.write(dir + "/uevent", uevent);
  sys.write(dir + "/vendor", gpu.vendor + "\n");
  sys.write(dir + "/device", gpu.device + "\n");
  sys.write(dir + "/class", gpu.pci_class + "\n");
  if (!gpu.subsystem_vendor.empty())
    sys.write(dir + "/subsystem_vendor", gpu.subsystem_vendor + "\n");
  if (!gpu.subsystem_device.empty())
    sys.write(dir + "/subsystem_device", gpu.subsystem_device + "\n");
  for (const auto& [name, text] : gpu.files) sys.write(dir + "/" + name, text);
}

// Symlinks: devices/pci0000:00/<address> holds the device, its driver link and drm/<node>,
// and class/drm/<node> links there. PlainDirs: class/drm/<node>/device is a directory with a
// copy of the device's files. Returns where the device's files are, relative to the root
// (for PlainDirs, those of the first node).
inline std::string add_pci_gpu(const SysTree& sys, const PciGpu& gpu, Layout layout) {
  if (layout == Layout::PlainDirs) {
    for (const auto& [node, minor] : gpu.nodes) {
      sys.write("class/drm/" + node + "/dev", "226:" + std::to_string(minor) + "\n");
      write_pci_device_files(sys, "class/drm/" + node + "/device", gpu);
    }
    return "class/drm/" + gpu.nodes.front().first + "/device";
  }
  const std::string dev_dir =
      "devices/pci0000:00/" + (gpu.bridge.empty() ? "" : gpu.bridge + "/") + gpu.address;
  write_pci_device_files(sys, dev_dir, gpu);
  sys.mkdir("bus/pci/drivers/" + gpu.driver);
  std::string up;  // from the device's folder to the root
  for (char c : dev_dir + "/") up += c == '/' ? "../" : "";
  sys.symlink(up + "bus/pci/drivers/" + gpu.driver, dev_dir + "/driver");
  for (const auto& [node, minor] : gpu.nodes) {
    sys.write(dev_dir + "/drm/" + node + "/dev", "226:" + std::to_string(minor) + "\n");
    sys.symlink("../../../" + gpu.address, dev_dir + "/drm/" + node + "/device");
    sys.symlink("../../" + dev_dir + "/drm/" + node, "class/drm/" + node);
  }
  return dev_dir;
}

}  // namespace gpureap::test
