#pragma once
// The one line `ps` adds when the kernel log shows a critical GPU error since boot (a GPU
// fallen off the bus, say): the table alone would look healthy. The error is named as its
// vendor's parser writes it (KernelGpuEvent::code_text).
#include <optional>
#include <string>

#include "core/kernel_event.h"

namespace gpureap::output {

// "note: GPU 0 had <label> 79 (GPU has fallen off the bus) since boot (and 2 more critical GPU
// errors); `gpureap doctor` explains". Empty when no critical error was logged.
std::optional<std::string> kernel_note(const core::KernelLog& log);

}  // namespace gpureap::output
