#pragma once
// GPU names from the PCI ID database: the pci.ids file of the PCI ID Project that distributions
// ship (Debian's `pci.ids` package at usr/share/misc/pci.ids; `hwdata` at
// usr/share/hwdata/pci.ids). The kernel gives only numbers (vendor 0x1002, device 0x73bf);
// the database names the chip ("Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]") and, for a
// subsystem it knows, the board ("Radeon RX 6900 XT").
//
// Format, one entry a line, '#' starts a comment:
//   vendor  vendor_name
//   <TAB>device  device_name
//   <TAB><TAB>subvendor subdevice  subsystem_name
// and, after the vendors, the device classes ("C 03  Display controller"), which end the search.
#include <optional>
#include <string>
#include <string_view>

namespace gpureap::backend::drm {

struct PciId {
  unsigned vendor = 0;
  unsigned device = 0;
  std::optional<unsigned> subsystem_vendor;
  std::optional<unsigned> subsystem_device;
};

struct PciName {
  std::optional<std::string> device;     // "Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]"
  std::optional<std::string> subsystem;  // "Radeon RX 6900 XT"
};

// The names `ids` (the text of a pci.ids file) gives `id`. Lines that do not follow the format
// are skipped; a name is cut at 200 bytes and control characters are dropped.
PciName lookup_pci_name(std::string_view ids, const PciId& id);

// The database under `root` ("/" on the host): usr/share/misc/pci.ids, else
// usr/share/hwdata/pci.ids. The path read, or none when neither is there (or readable).
struct PciIdsFile {
  std::string path;
  std::string text;
};
std::optional<PciIdsFile> read_pci_ids(const std::string& root);

}  // namespace gpureap::backend::drm
