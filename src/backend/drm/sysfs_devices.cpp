#include "backend/drm/sysfs_devices.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <string_view>
#include <system_error>

#include "backend/drm/device_figures.h"
#include "backend/drm/sysfs_read.h"

namespace gpureap::backend::drm {
namespace {

namespace fs = std::filesystem;

constexpr unsigned kVendorAmd = 0x1002;
constexpr unsigned kVendorIntel = 0x8086;
constexpr unsigned kVendorNvidia = 0x10de;
constexpr uint64_t kMaxPciId = 0xffff;

// A DRM minor of class/drm: card<N> (the primary node) or renderD<N>. Connectors
// (card0-DP-1), "version" and the legacy controlD<N> are not nodes of their own.
struct Node {
  bool render = false;
  unsigned minor = 0;
};

std::optional<Node> classify(std::string_view name) {
  if (auto n = number_suffix(name, "card")) return Node{false, *n};
  if (auto n = number_suffix(name, "renderD")) return Node{true, *n};
  return std::nullopt;
}

// The keys of the PCI device's uevent that name it and its driver.
struct Uevent {
  std::optional<std::string> pci_slot;
  std::optional<std::string> driver;
};

Uevent parse_uevent(std::string_view text) {
  Uevent u;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (line.starts_with("PCI_SLOT_NAME=")) u.pci_slot = std::string(line.substr(14));
    if (line.starts_with("DRIVER=")) u.driver = std::string(line.substr(7));
  }
  return u;
}

bool hex_digits(std::string_view s, size_t min, size_t max) {
  return s.size() >= min && s.size() <= max && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

// DOMAIN:BUS:SLOT.FUNCTION ("0000:03:00.0"); domains above ffff exist (Intel VMD: 10000).
bool is_pci_address(std::string_view s) {
  size_t c1 = s.find(':');
  size_t c2 = s.find(':', c1 == std::string_view::npos ? c1 : c1 + 1);
  size_t dot = s.find('.', c2 == std::string_view::npos ? c2 : c2 + 1);
  if (dot == std::string_view::npos) return false;
  std::string_view fn = s.substr(dot + 1);
  return hex_digits(s.substr(0, c1), 4, 8) && hex_digits(s.substr(c1 + 1, c2 - c1 - 1), 2, 2) &&
         hex_digits(s.substr(c2 + 1, dot - c2 - 1), 2, 2) && fn.size() == 1 && fn[0] >= '0' &&
         fn[0] <= '7';
}

std::string basename_of(const fs::path& p) {
  return p.filename().string();
}

// uevent's PCI_SLOT_NAME, else the name of the directory the device link leads to (sysfs
// names a PCI device by its address). Virtual devices (vkms, simpledrm) have a platform or
// faux device there, or none: not a PCI address, so they are not listed.
std::optional<std::string> pci_address(const std::string& device_dir, const Uevent& uevent,
                                       AttributeReader& r) {
  if (uevent.pci_slot) {
    if (is_pci_address(*uevent.pci_slot)) return uevent.pci_slot;
    r.warn(device_dir + "/uevent", "PCI_SLOT_NAME is not a PCI address: " + *uevent.pci_slot);
  }
  std::error_code ec;
  fs::path real = fs::canonical(device_dir, ec);
  if (ec) return std::nullopt;
  std::string name = basename_of(real);
  if (!is_pci_address(name)) return std::nullopt;
  return name;
}

// uevent's DRIVER, else the name the device's driver link points to.
std::optional<std::string> driver_of(const std::string& device_dir, const Uevent& uevent) {
  if (uevent.driver && !uevent.driver->empty()) return uevent.driver;
  std::error_code ec;
  fs::path target = fs::read_symlink(device_dir + "/driver", ec);
  if (ec || target.empty()) return std::nullopt;
  return basename_of(target);
}

std::optional<unsigned> pci_id(const std::string& path, AttributeReader& r) {
  auto v = r.hex(path);
  if (!v) return std::nullopt;
  if (*v > kMaxPciId) {
    r.warn(path, fmt::format("not a 16-bit PCI id: {:#x}", *v));
    return std::nullopt;
  }
  return static_cast<unsigned>(*v);
}

std::string vendor_name(std::optional<unsigned> vendor) {
  if (!vendor) return "";
  switch (*vendor) {
    case kVendorAmd:
      return "amd";
    case kVendorIntel:
      return "intel";
    case kVendorNvidia:
      return "nvidia";
    default:
      return fmt::format("pci-0x{:04x}", *vendor);
  }
}

// What the PCI device says of itself, read once for all its nodes.
DrmDevice read_pci_device(std::string address, const std::string& device_dir, const Uevent& uevent,
                          AttributeReader& r) {
  DrmDevice d;
  d.pci_address = std::move(address);
  d.driver = driver_of(device_dir, uevent);
  d.pci_vendor = pci_id(device_dir + "/vendor", r);
  d.pci_device = pci_id(device_dir + "/device", r);
  d.pci_subsystem_vendor = pci_id(device_dir + "/subsystem_vendor", r);
  d.pci_subsystem_device = pci_id(device_dir + "/subsystem_device", r);
  d.vendor = vendor_name(d.pci_vendor);
  read_device_figures(device_dir, r, d);
  return d;
}

void add_node(DrmDevice& d, Node node, std::optional<dev_t> number) {
  std::optional<unsigned>& minor = node.render ? d.render_minor : d.card_minor;
  if (!minor) minor = node.minor;
  if (number) d.device_numbers.push_back(*number);
}

}  // namespace

DrmDevices read_drm_devices(const std::string& sys_root) {
  DrmDevices out;
  const std::string drm_dir = sys_root + "/class/drm";
  if (!is_dir(drm_dir)) return out;
  out.present = true;
  AttributeReader r(out.warnings);
  std::map<std::string, DrmDevice> by_address;  // ordered: the result is by PCI address
  for (const auto& name : list_dir(drm_dir)) {
    auto node = classify(name);
    if (!node) continue;
    const std::string node_dir = child(drm_dir, name);
    const std::string device_dir = node_dir + "/device";
    Uevent uevent = parse_uevent(r.text(device_dir + "/uevent").value_or(""));
    auto address = pci_address(device_dir, uevent, r);
    if (!address) continue;
    auto it = by_address.find(*address);
    if (it == by_address.end())
      it = by_address.emplace(*address, read_pci_device(*address, device_dir, uevent, r)).first;
    add_node(it->second, *node, r.device_number(node_dir + "/dev"));
  }
  for (auto& [address, device] : by_address) {
    std::sort(device.device_numbers.begin(), device.device_numbers.end());
    out.devices.push_back(std::move(device));
  }
  return out;
}

}  // namespace gpureap::backend::drm
