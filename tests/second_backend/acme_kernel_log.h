#pragma once
// Acme's kernel-log parser, as a vendor's folder under src/kernel would hold it: its driver logs
// each GPU error as "acme 0000:c1:00.0: AERR 51: board lost", with codes and a catalogue of its
// own. The registry entry carries it (acme_entry); doctor, `ps`, `reset` and /metrics read what
// it describes, and nothing outside this folder names Acme's codes.
#include "kernel/gpu_events.h"

namespace gpureap::testing {

// A code Acme's catalogue lists: a warning any reset recovers.
inline constexpr unsigned kAcmeRingTimeout = 23;
// One that needs a reboot.
inline constexpr unsigned kAcmeBoardLost = 51;

kernel::KernelLogParser acme_kernel_log();

}  // namespace gpureap::testing
