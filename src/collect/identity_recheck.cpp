#include "collect/identity_recheck.h"

#include "procfs/proc_fs.h"

namespace gpureap::collect {

std::optional<ChangedProcess> first_changed(const core::Snapshot& snapshot,
                                            const std::vector<pid_t>& pids,
                                            const std::string& proc_root) {
  auto proc = procfs::ProcFs::open(proc_root);
  if (!proc) return std::nullopt;
  for (pid_t pid : pids) {
    const core::HostProcess* then = snapshot.find(pid);
    if (!then || then->stat.is_zombie()) continue;  // a gone PID is named as gone, not as a process
    auto now = proc->read_stat(pid);
    if (!now) continue;  // unreadable: no evidence either way
    if (!*now) return ChangedProcess{pid, then->stat.comm, std::nullopt};
    if ((*now)->start_ticks != then->stat.start_ticks)
      return ChangedProcess{pid, then->stat.comm, (*now)->comm};
  }
  return std::nullopt;
}

}  // namespace gpureap::collect
