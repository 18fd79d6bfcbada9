#include "engine/ended_processes.h"

#include <algorithm>

namespace gpureap::engine {

void EndedProcesses::exited(const std::vector<pid_t>& pids) {
  ending_.insert(pids.begin(), pids.end());
}

std::vector<pid_t> EndedProcesses::moved(const procfs::ProcFs& proc, const core::ProcView& view,
                                         const std::vector<pid_t>& listed) {
  std::vector<pid_t> asked(listed.begin(), listed.end());
  asked.insert(asked.end(), ending_.begin(), ending_.end());
  // A process read while in do_exit() is a zombie or gone by the next read, whether or not its
  // exit event came (an overflow of the connector's queue loses it).
  for (const auto& p : view.processes)
    if (dead(p.stat) || exiting(p.stat)) asked.push_back(p.stat.pid);
  std::sort(asked.begin(), asked.end());
  asked.erase(std::unique(asked.begin(), asked.end()), asked.end());

  std::vector<pid_t> out;
  for (pid_t pid : asked) {
    const core::HostProcess* was = view.find(pid);
    const bool ending = ending_.count(pid) > 0;
    if (!was) {  // nothing to correct (a listed PID the view lacks is the scan schedule's)
      ending_.erase(pid);
      continue;
    }
    auto st = proc.read_stat(pid);
    if (!st) continue;  // garbage: the next scan says
    if (!*st || (*st)->start_ticks != was->stat.start_ticks) {
      out.push_back(pid);  // gone, or the PID is another process's now
      ending_.erase(pid);
      continue;
    }
    const core::ProcessStat& now = **st;
    if (dead(now) != dead(was->stat) || (ending && now.state != was->stat.state))
      out.push_back(pid);
    // Dead: a zombie of the view from now on, asked again as such. Neither dead nor exiting:
    // the exit was one thread's (an exec from another thread), the process runs on.
    if (ending && (dead(now) || !exiting(now))) ending_.erase(pid);
  }
  return out;
}

}  // namespace gpureap::engine
