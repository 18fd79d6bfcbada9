#pragma once
// Between scans the engine keeps its latest view of /proc, so a process that ends would stay
// in it, alive or a zombie, until the next scan (10 minutes with the daemon's events): no
// ghost, no finding, a policy that matches nothing. What a scan would read differently is read
// again at every collection instead, one stat each: the view's zombies (until reaped), the PIDs
// the driver lists, the processes the view read in do_exit() (PF_EXITING: the kernel vouches
// they are ending, and their exit event may be lost to an overflow of the connector's queue)
// until /proc shows them dead or gone, and the processes the kernel saw end
// (ScanRequest::exited) until /proc shows them gone, dead, or running on (one thread's exit).
// So the view answers at each collection as a scan would about whether those processes are
// there.
#include <sys/types.h>

#include <set>
#include <vector>

#include "core/process.h"
#include "core/snapshot.h"
#include "procfs/proc_fs.h"

namespace gpureap::engine {

// Z or X: its threads have ended; a zombie waits for its parent to reap it.
inline bool dead(const core::ProcessStat& st) {
  return st.state == 'Z' || st.state == 'X' || st.state == 'x';
}
// PF_EXITING (include/linux/sched.h): the thread is in do_exit(). The kernel sets it before it
// reports the exit, so a thread read between the report and its end is not taken for live. Of
// a process, the flag of the thread that stands for it: one whose main thread has exited while
// another runs (ProcessStat::leader_exited) is ending only when that thread is, and is not read
// again at each collection for the leader's end alone.
inline bool exiting(const core::ProcessStat& st) {
  return st.is_exiting();
}

class EndedProcesses {
 public:
  // The kernel saw these end (their leader's exit: see track::ProcEvent).
  void exited(const std::vector<pid_t>& pids);
  // The processes of `view` that /proc now shows otherwise, to read again: gone, another process
  // under the PID (its start time), dead where the view has them alive or the reverse; for one
  // seen ending, its state too while it is exiting. Asks the view's zombies, `listed` (the
  // driver's PIDs), those read exiting and those seen ending; a stat read each.
  std::vector<pid_t> moved(const procfs::ProcFs& proc, const core::ProcView& view,
                           const std::vector<pid_t>& listed);

 private:
  std::set<pid_t> ending_;  // seen ending, not yet shown gone, dead or running on
};

}  // namespace gpureap::engine
