#include "supervise/exit_status.h"

#include <sys/wait.h>

namespace gpureap::supervise {

const char* to_string(EndCause cause) {
  switch (cause) {
    case EndCause::Exited:
      return "exited";
    case EndCause::Signaled:
      return "signaled";
    case EndCause::TimedOut:
      return "timeout";
    case EndCause::NotFound:
      return "not-found";
    case EndCause::NotExecutable:
      return "not-executable";
    case EndCause::StartFailed:
      return "start-failed";
  }
  return "unknown";
}

JobExit exit_from_wait_status(int wait_status, bool timed_out) {
  JobExit e;
  if (WIFEXITED(wait_status)) {
    e.cause = EndCause::Exited;
    e.status = WEXITSTATUS(wait_status);
    e.code = *e.status;
  } else if (WIFSIGNALED(wait_status)) {
    e.cause = EndCause::Signaled;
    e.signal = WTERMSIG(wait_status);
    e.code = 128 + *e.signal;
  } else {
    // Stopped/continued statuses are never final; seeing one here is a gpureap bug.
    e.cause = EndCause::StartFailed;
    e.code = kExitStartFailed;
    e.error = core::Error{"internal error: unexpected wait status " + std::to_string(wait_status),
                          "please report this as a gpureap bug"};
  }
  // As timeout(1): 124 whatever the job did once its time was up, so scripts can tell a
  // timeout from a crash; the job's own status stays in the report.
  if (timed_out) {
    e.cause = EndCause::TimedOut;
    e.code = kExitTimedOut;
  }
  return e;
}

JobExit start_failure(EndCause cause, core::Error error) {
  JobExit e;
  e.cause = cause;
  e.code = cause == EndCause::NotFound        ? kExitNotFound
           : cause == EndCause::NotExecutable ? kExitNotExecutable
                                              : kExitStartFailed;
  e.error = std::move(error);
  return e;
}

}  // namespace gpureap::supervise
