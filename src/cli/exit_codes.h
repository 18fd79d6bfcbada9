#pragma once
// Every exit status of gpureap's commands, as README documents them, defined once. Scripts (the
// Slurm prolog and epilog, systemd's RestartPreventExitStatus) depend on these numbers.
#include "reap/outcome.h"
#include "supervise/exit_status.h"

namespace gpureap::cli {

enum ExitCode : int {
  kExitOk = 0,  // success; kill: every target gone and its memory back
  // kill: something survived or memory stayed held (also: the user said no); reset: refused or
  // failed
  kExitFailed = 1,
  kExitUsage = 2,    // usage, permission or environment error, with a message saying what to do
  kExitNoMatch = 3,  // kill: nothing matched
  kExitDriverTimeout = 4,  // the GPU driver did not answer within --driver-timeout
  // run: gpureap failed before CMD ran, usage errors included (as timeout(1) and env(1)); its
  // other statuses are CMD's own, 128+N, 124, 126 and 127 (supervise/exit_status.h)
  kExitRunFailed = supervise::kExitStartFailed,
};

// doctor's statuses follow the worst finding (of those --only keeps).
enum DoctorExit : int {
  kDoctorHealthy = 0,    // nothing above info
  kDoctorWarnings = 1,   // warnings
  kDoctorCritical = 2,   // critical findings
  kDoctorCannotRun = 3,  // gpureap could not run (a bad option, a --gpu the driver lacks)
};

// The reaper composes kill's status into the gpureap.kill/v1 document itself; it must be this
// table's.
static_assert(reap::kExitReleased == kExitOk && reap::kExitHeld == kExitFailed &&
              reap::kExitEnvironment == kExitUsage && reap::kExitNoMatch == kExitNoMatch);

}  // namespace gpureap::cli
