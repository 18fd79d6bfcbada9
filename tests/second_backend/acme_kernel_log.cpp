#include "acme_kernel_log.h"

#include <charconv>
#include <string_view>

#include "kernel/pci_address.h"

namespace gpureap::testing {
namespace {

struct AcmeCode {
  unsigned code;
  kernel::KernelCode words;
  core::KernelEventLevel level;
  bool needs_reboot;
};

constexpr AcmeCode kCatalogue[] = {
    {kAcmeRingTimeout,
     {"ring timeout", "a shader ran past the ring's watchdog", "acme-smi --reset-ring"},
     core::KernelEventLevel::Warning,
     false},
    {kAcmeBoardLost,
     {"board lost", "the board stopped answering on the bus", "reboot"},
     core::KernelEventLevel::Critical,
     true},
};

const AcmeCode* find_code(unsigned code) {
  for (const auto& c : kCatalogue)
    if (c.code == code) return &c;
  return nullptr;
}

// "acme <pci>: AERR <code>: <detail>", the driver's own prefix at the start of the message.
std::optional<core::KernelGpuEvent> aerr_event(const kernel::KmsgRecord& r) {
  std::string_view text = r.text;
  constexpr std::string_view kPrefix = "acme ";
  if (!text.starts_with(kPrefix)) return std::nullopt;
  text.remove_prefix(kPrefix.size());
  auto colon = text.find(": AERR ");
  if (colon == std::string_view::npos) return std::nullopt;
  auto pci = kernel::normalize_pci_address(text.substr(0, colon));
  if (!pci) return std::nullopt;
  text.remove_prefix(colon + 7);
  unsigned code = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), code);
  if (ec != std::errc()) return std::nullopt;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  core::KernelGpuEvent e;
  e.vendor = "acme";
  e.kind = "aerr";
  e.code = code;
  e.pci_address = *pci;
  if (text.starts_with(": ")) e.detail = std::string(text.substr(2));
  if (const auto* c = find_code(code)) {
    e.name = std::string(c->words.name);
    e.level = c->level;
    e.needs_reboot = c->needs_reboot;
  }
  return e;
}

std::optional<kernel::KernelCode> describe_aerr(unsigned code) {
  const auto* c = find_code(code);
  return c ? std::optional(c->words) : std::nullopt;
}

}  // namespace

kernel::KernelLogParser acme_kernel_log() {
  return {
      "aerr", "AERR", aerr_event, describe_aerr, "Acme's AERR table", "journalctl -k | grep acme"};
}

}  // namespace gpureap::testing
