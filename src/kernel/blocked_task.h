#pragma once
// Why a process in uninterruptible sleep (D) is stuck: the kernel function it waits in (wchan),
// its kernel stack (/proc/PID/stack: root only), and the mount it waits on where the kernel lets
// that be told: a FUSE connection (<sys-root>/fs/fuse/connections/<minor of the mount's device>,
// with its count of unanswered requests) or an NFS mount (from the process's mountinfo). A wait
// in the GPU driver's own functions (the prefixes its registry entry names) is the driver's and
// only a reboot ends it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/kernel_event.h"

namespace gpureap::kernel {

struct MountEntry {
  unsigned major = 0;
  unsigned minor = 0;
  std::string mount_point;
  std::string fs_type;
  std::string source;
};

// /proc/PID/mountinfo: "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw"
// (octal escapes such as \040 in paths decoded). Malformed lines are skipped.
std::vector<MountEntry> parse_mountinfo(std::string_view text);
// /proc/PID/stack: "[<0>] fuse_wait_answer+0x3c/0x70 [fuse]" → "fuse_wait_answer".
std::vector<std::string> parse_kernel_stack(std::string_view text);
// What the wait channel and the stack's functions point at.
// `driver_functions`: the prefixes of the GPU drivers' own functions (each vendor's registry
// entry names its kernel modules').
core::BlockedOn classify_wait(const std::optional<std::string>& wchan,
                              const std::vector<std::string>& stack,
                              const std::vector<std::string>& driver_functions);
// The first of the wait channel and the stack's functions that starts with one of `prefixes`.
std::optional<std::string> first_function_of(const std::optional<std::string>& wchan,
                                             const std::vector<std::string>& stack,
                                             const std::vector<std::string>& prefixes);

// Reads the evidence of one process through the runtime roots. A process that left D or
// vanished still gets what could be read.
core::BlockedTask read_blocked_task(const std::string& proc_root, const std::string& sys_root,
                                    pid_t pid, const std::vector<std::string>& driver_functions);

}  // namespace gpureap::kernel
