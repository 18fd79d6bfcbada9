#include "core/process.h"

#include <sys/sysmacros.h>

#include <algorithm>

#include "core/gpu.h"

namespace gpureap::core {

// PF_KTHREAD from include/linux/sched.h: the task is a kernel thread.
constexpr unsigned kPfKthread = 0x00200000;

bool ProcessStat::is_kernel_thread() const {
  return (flags & kPfKthread) != 0;
}

std::string ContainerInfo::display_name() const {
  if (verified && pod_name) return (pod_namespace ? *pod_namespace + "/" : "") + *pod_name;
  if (verified && name) return runtime + ":" + *name;
  std::string shown = runtime;
  if (id)
    shown += ":" + id->substr(0, 12);
  else if (pod_uid)
    shown += ":pod " + pod_uid->substr(0, 8);
  return verified ? shown : "unverified " + shown;
}

const ContainerInfo* HostProcess::verified_container() const {
  return details && details->container && details->container->verified ? &*details->container
                                                                       : nullptr;
}

bool DeviceHold::reaches(const Gpu& gpu) const {
  if (!device) return false;
  if (!gpu.device_numbers.empty())
    return std::find(gpu.device_numbers.begin(), gpu.device_numbers.end(), *device) !=
           gpu.device_numbers.end();
  return gpu_file && gpu.device_major && ::major(*device) == *gpu.device_major;
}

bool DeviceHold::may_keep_context(const Gpu& gpu) const {
  return reaches(gpu) &&
         std::find(gpu.display_device_numbers.begin(), gpu.display_device_numbers.end(), *device) ==
             gpu.display_device_numbers.end();
}

bool HostProcess::holds_gpu(const Gpu& gpu) const {
  return std::any_of(devices.begin(), devices.end(),
                     [&](const DeviceHold& d) { return d.reaches(gpu); });
}

bool HostProcess::holds_gpu_file() const {
  return std::any_of(devices.begin(), devices.end(),
                     [](const DeviceHold& h) { return h.gpu_file; });
}

}  // namespace gpureap::core
