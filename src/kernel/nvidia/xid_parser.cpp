#include "kernel/nvidia/xid_parser.h"

#include "kernel/nvidia/xid_catalog.h"
#include "kernel/nvidia/xid_line.h"

namespace gpureap::kernel::nvidia {
namespace {

std::optional<core::KernelGpuEvent> xid_event(const KmsgRecord& r) {
  auto x = parse_xid_line(r.text);
  if (!x) return std::nullopt;
  core::KernelGpuEvent e;
  e.vendor = "nvidia";
  e.kind = "xid";
  e.code = x->xid;
  e.pci_address = x->pci_address;
  e.pid = x->pid;
  e.process_name = x->process_name;
  e.detail = x->detail;
  if (const auto* entry = find_xid(x->xid)) {
    e.name = std::string(entry->name);
    e.level = entry->level;
    e.needs_reboot = entry->needs_reboot;
  }
  return e;
}

std::optional<KernelCode> describe_xid(unsigned code) {
  const auto* entry = find_xid(code);
  if (!entry) return std::nullopt;
  return KernelCode{entry->name, entry->cause, entry->action};
}

}  // namespace

KernelLogParser xid_parser() {
  return {"xid",
          "Xid",
          xid_event,
          describe_xid,
          "NVIDIA's \"Xid Errors\" document",
          "journalctl -k | grep -i xid",
          "xid"};  // gpureap_xid_*{xid}: the metrics 0.1 had, kept through 0.2
}

}  // namespace gpureap::kernel::nvidia
