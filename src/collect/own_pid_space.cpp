#include "collect/own_pid_space.h"

#include "procfs/proc_fs.h"

namespace gpureap::collect {

core::PidSpace own_pid_space(const std::string& proc_root) {
  auto proc = procfs::ProcFs::open(proc_root);
  if (!proc) return {};
  return {proc->boot_time(), proc->pid_namespace()};
}

}  // namespace gpureap::collect
