#pragma once
// The command that resets one GPU, as its vendor's driver offers one: the remedy for memory
// only a reset frees. gpureap drives NVIDIA's reset itself (`gpureap reset`); amdgpu's is
// asked through debugfs (reading amdgpu_gpu_recover); i915 and xe offer none a user should
// reach for before a reboot.
#include <string>

#include "core/kernel_event.h"
#include "core/snapshot.h"

namespace gpureap::doctor {

// `gpu` is the GPU's global index; the snapshot tells its vendor. Without a known GPU, the
// NVIDIA command (the one index-only naming gpureap has always given).
std::string reset_command(const core::Snapshot& s, unsigned gpu);
// The same, unless the kernel log shows an error on that GPU that no reset recovers (NVIDIA's
// Xid 79, fallen off the bus; 95, uncontained ECC error): then "reboot", with why.
std::string reset_command(const core::Snapshot& s, unsigned gpu, const core::KernelLog* kernel);

}  // namespace gpureap::doctor
