#pragma once
// The rules that decide what may be signalled. Some processes are never signalled (PID 1,
// kernel threads, gpureap and the processes it runs under); a protected list (display
// servers, GPU management daemons) only when the user names the PID; other users' processes
// only by root.
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"
#include "reap/plan.h"

namespace gpureap::reap {

// Display servers, the persistence daemon, DCGM and its exporter, gpureap itself.
const std::vector<std::string_view>& protected_names();

// Matched by comm (which the kernel cuts to 15 bytes) or by argv[0]'s basename.
bool is_protected(std::string_view comm, const std::vector<std::string>& cmdline);

// Decides target.action (and target.refusal) from the rules above.
void judge(Target& target, const core::HostProcess& process, const Caller& caller);

// The running gpureap: its PID, group, uids and ancestors (from the snapshot, and the live
// parent in case the snapshot's procfs is not this system's).
Caller current_caller(const core::Snapshot& snapshot);

}  // namespace gpureap::reap
