#pragma once
// NVIDIA's Xids as a kernel-log parser: the registry's entry for NVML carries it.
#include "kernel/gpu_events.h"

namespace gpureap::kernel::nvidia {

KernelLogParser xid_parser();

}  // namespace gpureap::kernel::nvidia
