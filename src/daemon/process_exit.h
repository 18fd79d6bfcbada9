#pragma once
// Whether a process the proc connector reported ending has ended. The connector reports every
// thread's exit, and a leader thread's is not always its process's: a non-leader thread's exec()
// reports the old leader's exit while the process runs on (the exec'ing thread takes the PID and
// keeps the start time), and a leader that pthread_exit()s reports it while its other threads
// run (the leader shows as a zombie with num_threads > 1). So an exit decides nothing until
// /proc shows the thread group gone: no thread of it left that is neither dead (Z, X) nor
// exiting (PF_EXITING; the kernel sets it before it reports the exit, so a thread read between
// its report and its end is not taken for a live one), and the kernel counts no thread of it
// but the leader (a thread exec()ing from another reads as neither for a moment). A read that
// straddles the exec'ing thread's taking of the PID reads the old leader as the kernel
// releases it: a zombie counting no thread at all. That says nothing, and is read again.
//
// A group exit (exit_group(), a fatal signal) reports the leader's exit while the other threads
// may not have begun theirs: they still look alive then, and only their own exits, read later,
// show the group gone. A caller asks again at each of them, and a while after the last: the
// kernel reports a thread's exit before it releases the thread, which /proc counts until then.
#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "procfs/proc_fs.h"

namespace gpureap::daemon {

enum class ProcessExit {
  Ended,       // gone from /proc, or no thread of it lives
  Replaced,    // another process has the PID now (not the start time known, or one later than
               // the exit): it ended, but /proc keeps no trace of when
  LeaderRuns,  // its leader runs (an exec from another thread took the PID): a later end is
               // reported as the leader's exit again
  ThreadsRun,  // its leader ended, another thread runs (or /proc cannot say: an unreadable
               // stat): its end is a later thread's exit
};

// What /proc says of `pid`, whose leader's exit (or a thread's) the connector reported;
// `start_ticks`: its start time, where known; `exit_ticks`: when the exit was reported (clock
// ticks since boot), where an event did. A process under the PID that started in a later tick
// than the exit is not the one that exited, whatever start time is known (or none).
ProcessExit check_exit(const procfs::ProcFs& proc, pid_t pid, std::optional<uint64_t> start_ticks,
                       std::optional<uint64_t> exit_ticks = std::nullopt);

}  // namespace gpureap::daemon
