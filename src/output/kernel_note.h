#pragma once
// The one line `ps` adds when the kernel log shows a critical GPU error since boot (an Xid
// such as 79, fallen off the bus): the table alone would look healthy.
#include <optional>
#include <string>

#include "core/kernel_event.h"

namespace gpureap::output {

// "note: GPU 0 had Xid 79 (GPU has fallen off the bus) since boot (and 2 more critical GPU
// errors); `gpureap doctor` explains". Empty when no critical error was logged.
std::optional<std::string> kernel_note(const core::KernelLog& log);

}  // namespace gpureap::output
