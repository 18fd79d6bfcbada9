#include "reap/world.h"

#include "procfs/thread_group.h"

namespace gpureap::reap {

core::Result<std::optional<core::ProcessStat>> ProcFsProbe::stat(pid_t pid) const {
  return proc_.read_stat(pid);
}

std::optional<core::ProcessDetails> ProcFsProbe::details(pid_t pid, bool want_wchan) const {
  return proc_.read_details(pid, want_wchan).details;
}

std::optional<pid_t> ProcFsProbe::thread_group_of(pid_t tid) const {
  return procfs::thread_group_of(proc_.dirfd(), tid);
}

}  // namespace gpureap::reap
