#pragma once
// gpureap run's exit code, following timeout(1) and env(1): CMD's own status, 128+N when it
// died of signal N, 124 when --timeout ended it, 125 when gpureap failed before CMD ran,
// 126 when CMD cannot be executed, 127 when it does not exist.
#include <string>

#include "supervise/run_report.h"

namespace gpureap::supervise {

inline constexpr int kExitTimedOut = 124;
inline constexpr int kExitStartFailed = 125;
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;

// From a waitpid() status of CMD; `timed_out`: --timeout expired before it ended.
JobExit exit_from_wait_status(int wait_status, bool timed_out);

// A CMD that never ran: cause NotFound, NotExecutable or StartFailed.
JobExit start_failure(EndCause cause, core::Error error);

}  // namespace gpureap::supervise
