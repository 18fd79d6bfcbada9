#pragma once
// NVIDIA's driver reports GPU errors in the kernel log as Xid lines. Their shape changed over
// driver generations, so the parser is liberal:
//   NVRM: Xid (0000:03:00): 13, 0002 00000000 0000a097 ...                 (R3xx)
//   NVRM: Xid (PCI:0000:01:00): 31, Ch 00000010, engmask 00000101, ...     (R4xx)
//   NVRM: Xid (PCI:0000:3b:00): 43, pid=2283, Ch 00000008                  (R470)
//   NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, name=python, Ch 00000008 ... (R510 and later)
//   NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
//   NVRM: Xid (PCI:0000:3b:00 GPU-I:03): 31, pid=4242, name=python, ...  (an instance of a MIG GPU)
// but only at the start of the message: the driver writes its prefix first, and many kernel
// messages quote text a user chose (a file name, a path, a program's name) after their own.
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace gpureap::kernel::nvidia {

struct XidLine {
  std::string pci_address;  // normalize_pci_address's form
  unsigned xid = 0;
  std::optional<pid_t> pid;
  std::optional<std::string> process_name;
  std::string detail;  // what follows the number (and pid=, name=)
};

// The Xid of one kernel message, or nothing when it is not an Xid line (the message must begin
// with the driver's "NVRM: Xid").
std::optional<XidLine> parse_xid_line(std::string_view message);

}  // namespace gpureap::kernel::nvidia
