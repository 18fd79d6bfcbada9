#include "backend/nvml/nvidia_presence.h"

#include <cctype>
#include <filesystem>

#include "procfs/file_read.h"

namespace gpureap::backend::nvml {
namespace {

// "nvidia0", "nvidia15": the per-GPU nodes; nvidia-uvm, nvidia-modeset and nvidia-caps are the
// driver's too, but only with nvidiactl beside them.
bool is_gpu_node(const std::string& name) {
  if (!name.starts_with("nvidia") || name.size() == 6) return false;
  for (size_t i = 6; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

std::string first_line(const std::string& path) {
  auto f = procfs::read_file(path, 64);
  if (!f.ok()) return {};
  return f.data.substr(0, f.data.find('\n'));
}

}  // namespace

bool nvidia_device_node_exists(const std::string& dev_root) {
  std::error_code ec;
  if (std::filesystem::exists(dev_root + "/nvidiactl", ec)) return true;
  for (std::filesystem::directory_iterator it(dev_root, ec), end; !ec && it != end;
       it.increment(ec))
    if (is_gpu_node(it->path().filename().string())) return true;
  return false;
}

bool nvidia_pci_display_exists(const std::string& sys_root) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(sys_root + "/bus/pci/devices", ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string dir = it->path().string();
    // class is 0xCCSSPP: 0x03 is a display controller (VGA 0x0300, 3D 0x0302).
    if (first_line(dir + "/vendor") == "0x10de" && first_line(dir + "/class").starts_with("0x03"))
      return true;
  }
  return false;
}

}  // namespace gpureap::backend::nvml
