#include "kernel/pci_address.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

namespace gpureap::kernel {
namespace {

std::optional<unsigned long> hex(std::string_view s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  unsigned long v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::string> normalize_pci_address(std::string_view text) {
  if (text.substr(0, 4) == "PCI:" || text.substr(0, 4) == "pci:") text.remove_prefix(4);
  if (size_t dot = text.find('.'); dot != std::string_view::npos) {
    if (!hex(text.substr(dot + 1), 1)) return std::nullopt;
    text = text.substr(0, dot);
  }
  std::vector<std::string_view> parts;
  while (true) {
    size_t colon = text.find(':');
    parts.push_back(text.substr(0, colon));
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  if (parts.size() == 2) parts.insert(parts.begin(), "0");
  if (parts.size() != 3) return std::nullopt;
  auto domain = hex(parts[0], 8);
  auto bus = hex(parts[1], 2);
  auto device = hex(parts[2], 2);
  if (!domain || !bus || !device || *domain > 0xffff || *device > 0x1f) return std::nullopt;
  return fmt::format("{:04x}:{:02x}:{:02x}", *domain, *bus, *device);
}

}  // namespace gpureap::kernel
