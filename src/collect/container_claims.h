#pragma once
// Whether a process runs in the container its cgroup's name claims. Anyone with a delegated
// cgroup subtree (every logged-in user, under user@UID.service) can create
// "docker-<someone else's id>.scope" and move a process in; only what the kernel and the
// runtime's own state vouch for makes the claim a fact:
//   - the kernel: the cgroup's directory, and every one above it, belongs to root, and none is a
//     user@*.service (procfs/cgroup_owner); a user-owned one refutes the claim;
//   - the runtime: its state records the container's init PID, and that process is the one
//     claiming or its ancestor, or runs in the very cgroup that names the container (a
//     `docker exec`'s process is a child of the runtime's shim, not of the init).
// Where the runtime keeps state for the container, the runtime must agree. Where it keeps none
// that gpureap can read (the runtime root lacks its folder, a pod-level process, a runtime gpureap
// does not know), a root-owned cgroup outside every delegated subtree is enough: only root
// makes such a cgroup, and root could start any container anyway. The claim is then verified
// "by the cgroup's owner", with the names left unknown unless the kubelet's pod directory gives
// them. A cgroup gpureap cannot see (another cgroup namespace) is verified only by the runtime.
#include <string>

#include "core/snapshot.h"
#include "procfs/proc_fs.h"

namespace gpureap::collect {

// Decides every unchecked claim of `view`'s processes with details (ContainerInfo::verified and
// ::verification), and gives the verified ones the names their runtime's state holds. Each
// container's cgroup and state are read once; `cgroup_fs` is <sys-root>/fs/cgroup.
void settle_container_claims(core::ProcView& view, const procfs::ProcFs& proc,
                             const std::string& cgroup_fs, const std::string& runtime_root);

}  // namespace gpureap::collect
