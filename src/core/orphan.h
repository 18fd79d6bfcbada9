#pragma once
// Whether a process is an orphan, a leftover of a job that is gone, and the evidence for it.
// A parent that is an init (the host's, or a container entrypoint as PID 1 of its namespace)
// or a subreaper is no evidence: it is also the live parent of every process it started itself.
// Reparenting leaves no mark in /proc, so an orphan is called one only where the job that
// started it is seen to be gone.
#include <sys/types.h>

#include <optional>

#include "core/snapshot.h"

namespace gpureap::core {

struct OrphanEvidence {
  enum class Kind {
    ParentExited,       // the daemon saw its parent fork it, and then exit
    GroupLeaderGone,    // the leader of its process group ended, no live parent in it is left
    SessionLeaderGone,  // the leader of its session ended, no live parent in it is left
  };
  Kind kind = Kind::ParentExited;
  pid_t gone = 0;  // the parent that exited, or the leader that ended
};

// Empty when nothing says that its job is gone. A namespace's init and a session leader are
// never orphans: each was made the head of a job of its own (a container, setsid, a service).
std::optional<OrphanEvidence> orphan_evidence(const ProcView& view, const HostProcess& p);

}  // namespace gpureap::core
