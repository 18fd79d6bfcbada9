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
#include "reap/world.h"

namespace gpureap::reap {

// Display servers, the persistence daemon, DCGM and its exporter, gpureap itself.
const std::vector<std::string_view>& protected_names();

// A protected process runs a system-installed program (root's file, in root's directory) of
// a protected name. When its program cannot be read, its name (comm, which the kernel cuts to
// 15 bytes, or argv[0]'s basename) counts only if it runs as root or a system uid: a user's
// look-alike is any other process of that user.
bool is_protected(std::string_view comm, const core::ProcessDetails* details);
inline bool is_protected(std::string_view comm,
                         const std::optional<core::ProcessDetails>& details) {
  return is_protected(comm, details ? &*details : nullptr);
}
// The same for a process of a snapshot, from the details it read. One name (not an overload), so
// it can be passed as it is wherever a predicate is wanted (doctor's DoctorInput::is_protected).
bool is_protected_process(const core::HostProcess& process);

// Decides target.action (and target.refusal) from the rules above.
void judge(Target& target, const core::HostProcess& process, const Caller& caller);

// The running gpureap: its PID, group, uids and its ancestors as /proc shows them now (through
// `proc`), never as a snapshot does: a snapshot (the daemon's, fed to `top`) may predate the
// shell that runs gpureap, and would not name it.
Caller current_caller(const ProcessProbe& proc);
// gpureap's ancestors now: its parent, grandparent, ... up to PID 1.
std::vector<pid_t> own_ancestors(const ProcessProbe& proc);
// As a snapshot shows them: for screening its rows up front (policy exemptions); whatever signals
// asks /proc (the overload above) again.
std::vector<pid_t> own_ancestors(const core::Snapshot& snapshot);

}  // namespace gpureap::reap
