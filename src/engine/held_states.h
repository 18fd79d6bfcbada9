#pragma once
// Between scans the engine's view keeps each process's state as the last scan read it: scans are
// an hour apart at most in the scans mode and 10 minutes apart with the daemon's events, and no
// kernel event reports a stop or a resume. A job paused and resumed since would still read
// "stopped" (a policy on `stopped` would end a job that runs again), one out of uninterruptible
// sleep still "D". The states that findings and policies decide on are read again at every
// collection instead, one stat per GPU-file holder and listed PID: paused (T, t), in
// uninterruptible sleep (D), or neither. A flip between running and sleeping costs nothing more.
#include <sys/types.h>

#include <vector>

#include "core/snapshot.h"
#include "procfs/proc_fs.h"

namespace gpureap::engine {

// The holders of `view` and the PIDs in `listed` it has whose state /proc now shows paused where
// the view has them not, or the reverse, or in or out of uninterruptible sleep: to read again.
// A process gone, or another one's now, is EndedProcesses' to tell.
std::vector<pid_t> held_states_moved(const procfs::ProcFs& proc, const core::ProcView& view,
                                     const std::vector<pid_t>& listed);

}  // namespace gpureap::engine
