#pragma once
// What must be gone before a GPU reset: every process that holds the GPU's device file or is
// listed on it by the driver (a reset under a live process kills its work, and NVIDIA refuses
// it anyway while any client is attached).
#include <string>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"

namespace gpureap::doctor {

struct ResetBlocker {
  pid_t pid = 0;
  std::string why;  // "holds /dev/nvidia0 on fd 7", "listed by the driver with 8.0 GiB"
};

// Error when the GPU is unknown to the backend (the device file cannot be mapped).
core::Result<std::vector<ResetBlocker>> reset_blockers(const core::Snapshot& s, unsigned gpu);

// nvidia-smi's complaint turned into the next step (persistence mode, another client, ...).
std::string reset_failure_hint(const std::string& nvidia_smi_output, unsigned gpu);

}  // namespace gpureap::doctor
