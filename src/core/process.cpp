#include "core/process.h"

namespace gpureap::core {

// PF_KTHREAD from include/linux/sched.h: the task is a kernel thread.
constexpr unsigned kPfKthread = 0x00200000;

bool ProcessStat::is_kernel_thread() const {
  return (flags & kPfKthread) != 0;
}

bool HostProcess::holds_nvidia_gpu(std::optional<unsigned> minor) const {
  for (const auto& d : devices)
    if (d.nvidia_minor && (!minor || *d.nvidia_minor == *minor)) return true;
  return false;
}

}  // namespace gpureap::core
