#include "output/kernel_note.h"

#include <fmt/format.h>

#include "text/escape.h"

namespace gpureap::output {

std::optional<std::string> kernel_note(const core::KernelLog& log) {
  const core::KernelGpuEvent* last = nullptr;
  size_t critical = 0;
  // A record stamped later than it was read is not of this boot: nothing it says is "since boot".
  for (const auto& e : log.events)
    if (e.level == core::KernelEventLevel::Critical && e.stamp != core::KernelStamp::Future) {
      last = &e;
      ++critical;
    }
  if (!last) return std::nullopt;
  std::string where =
      last->gpu ? fmt::format("GPU {}", *last->gpu) : "the GPU at PCI " + last->pci_address;
  std::string what = last->code_text() + (last->name ? " (" + *last->name + ")" : std::string());
  std::string more = critical > 1 ? fmt::format(" (and {} more critical GPU error{})", critical - 1,
                                                critical == 2 ? "" : "s")
                                  : "";
  return text::terminal_safe(
      fmt::format("note: {} had {} since boot{}; `gpureap doctor` explains", where, what, more));
}

}  // namespace gpureap::output
