#pragma once
// PCI addresses as drivers print them ("0000:3b:00", "PCI:0000:3B:00.0", a library's
// "00000000:3B:00.0", "3b:00.0"), reduced to one form so a kernel message can be matched to the
// GPU a backend reports. The function is dropped: GPU drivers name the device.
#include <optional>
#include <string>
#include <string_view>

namespace gpureap::kernel {

// "dddd:bb:dd" in lower case; empty when the text is not a PCI address.
std::optional<std::string> normalize_pci_address(std::string_view text);

}  // namespace gpureap::kernel
