#pragma once
// What must be gone before a GPU reset: every process that holds the GPU's device file or is
// listed on it by the driver (a reset under a live process kills its work, and a driver may
// refuse it anyway while any client is attached).
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"

namespace gpureap::doctor {

struct ResetBlocker {
  pid_t pid = 0;
  std::string comm;  // untrusted: escaped where it is shown
  std::string why;   // "holds /dev/<gpu file> on fd 7", "listed by the driver with 8.0 GiB"
  // On a split GPU, the GPU instance it works in (core::in_place); empty: none, or not split.
  std::optional<unsigned> gpu_instance;
};

// Error when the GPU is unknown to the backend (the device file cannot be mapped).
core::Result<std::vector<ResetBlocker>> reset_blockers(const core::Snapshot& s, unsigned gpu);

// Why a reset of GPU `gpu` is refused, one line each: the processes that block it (a reset
// ends them) and the command that ends exactly those, never a wider one (`kill --gpu N` also
// plans the keepers of a gone PID listed on the GPU that hold only another GPU's file).
std::vector<std::string> reset_refusal(unsigned gpu, const std::vector<ResetBlocker>& blockers);
// The same; on a split GPU the blockers are named under the instance each works in.
std::vector<std::string> reset_refusal(const core::Snapshot& s, unsigned gpu,
                                       const std::vector<ResetBlocker>& blockers);

// "reset is blocked by paused PID 4242; resume or end it first" when a stopped process (Ctrl-Z,
// SIGSTOP) is among what blocks a reset of GPU `gpu`: it holds the GPU forever unless resumed or
// ended. Empty when none is.
std::optional<std::string> paused_reset_note(const core::Snapshot& s, unsigned gpu);

// What a reset of a split GPU does, said before anything else: it ends the work on every
// instance. The first line, then one per GPU instance with the live processes in it and their
// users ("0/3 (<kind> 3g.40gb): bob's PID 4242 (python)"); empty when the GPU is not split.
std::vector<std::string> split_reset_lines(const core::Snapshot& s, unsigned gpu);
// The same in one line, for doctor's reset remedy: "GPU 0 is split into <kind> instances: a reset
// ends the work on every instance: 0/3 (<kind> 3g.40gb: bob's PID 4242), 0/5 (<kind> 1g.10gb:
// nothing)".
std::optional<std::string> split_reset_note(const core::Snapshot& s, unsigned gpu);

}  // namespace gpureap::doctor
