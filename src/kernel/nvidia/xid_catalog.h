#pragma once
// What NVIDIA's Xid numbers mean, the usual cause and what to do: one table
// (xid_catalog.cpp), the source of every severity and remedy gpureap words for an Xid.
#include <optional>
#include <span>
#include <string_view>

#include "core/kernel_event.h"

namespace gpureap::kernel::nvidia {

struct XidEntry {
  unsigned xid = 0;
  std::string_view name;    // NVIDIA's name for it
  std::string_view cause;   // the typical cause
  std::string_view action;  // what to do
  core::KernelEventLevel level = core::KernelEventLevel::Warning;
  // The application that ran into it is the usual cause (a bad kernel, an illegal address),
  // not the GPU: look at the process the line names.
  bool application = false;
  bool needs_reboot = false;  // a GPU reset does not bring it back
};

// Empty for an Xid the table does not know (it is still reported, by number and text).
const XidEntry* find_xid(unsigned xid);
// Every entry, by number.
std::span<const XidEntry> xid_catalog();

}  // namespace gpureap::kernel::nvidia
