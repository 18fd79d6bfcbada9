#pragma once
// What must be gone before a GPU reset: every process that holds the GPU's device file or is
// listed on it by the driver (a reset under a live process kills its work, and a driver may
// refuse it anyway while any client is attached).
#include <string>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"

namespace gpureap::doctor {

struct ResetBlocker {
  pid_t pid = 0;
  std::string comm;  // untrusted: escaped where it is shown
  std::string why;   // "holds /dev/<gpu file> on fd 7", "listed by the driver with 8.0 GiB"
};

// Error when the GPU is unknown to the backend (the device file cannot be mapped).
core::Result<std::vector<ResetBlocker>> reset_blockers(const core::Snapshot& s, unsigned gpu);

// Why a reset of GPU `gpu` is refused, one line each: the processes that block it (a reset
// ends them) and the command that ends exactly those, never a wider one (`kill --gpu N` also
// plans the keepers of a gone PID listed on the GPU that hold only another GPU's file).
std::vector<std::string> reset_refusal(unsigned gpu, const std::vector<ResetBlocker>& blockers);

}  // namespace gpureap::doctor
