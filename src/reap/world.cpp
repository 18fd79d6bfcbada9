#include "reap/world.h"

namespace gpureap::reap {

core::Result<std::optional<core::ProcessStat>> ProcFsProbe::stat(pid_t pid) const {
  return proc_.read_stat(pid);
}

std::optional<core::ProcessDetails> ProcFsProbe::details(pid_t pid, bool want_wchan) const {
  return proc_.read_details(pid, want_wchan).details;
}

}  // namespace gpureap::reap
