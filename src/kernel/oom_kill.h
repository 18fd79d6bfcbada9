#pragma once
// The OOM killer's records in the kernel log: which process it killed. A distributed job's rank
// that the OOM killer ended leaves its peers waiting; doctor names the record beside the exit.
#include <optional>

#include "core/kernel_event.h"
#include "kernel/kmsg_record.h"

namespace gpureap::kernel {

// The process one record says the OOM killer killed, or nothing. Only the kernel's own records
// count (facility 0, the words at the start): a process that writes to /dev/kmsg gets LOG_USER,
// and a process's name inside a record is its own text.
std::optional<core::OomKill> oom_kill(const KmsgRecord& record);

}  // namespace gpureap::kernel
