#pragma once
// The ghost verdict: which live process keeps which context alive. Computed once by the join
// from the open-file groups of the fd scan and the driver's lists; every consumer (ps, top,
// doctor, kill, policies, metrics, JSON) reads its result from the Snapshot.
#include <map>

#include "core/listed_identity.h"
#include "core/snapshot.h"

namespace gpureap::core {

struct GhostVerdict {
  std::vector<Ghost> ghosts;                              // gone PIDs of this namespace, by pid
  std::map<pid_t, std::vector<pid_t>> shares_context_of;  // worker -> live listed owners
  std::map<pid_t, std::vector<pid_t>> keeps;              // keeper -> gone PIDs
};

// Per GPU, every open file description of its device file is one group of fds:
// - a group with a live member the driver lists on that GPU (ListedIdentities::owner) belongs to
//   that process; its other members are the job's workers;
// - a group whose member the driver lists on another GPU only, and that is no kin of a gone
//   PID there, is that process's own (CUDA opens every visible GPU's file);
// - any other group, on a GPU where a gone PID is listed, keeps that PID's context only with
//   evidence: a member is kin of the gone PID (kin_of), so every member shares an open file with
//   the gone job. The members of the other groups are only "other holders": they hold the GPU's
//   files, but nothing says they keep the gone PID's memory, and nothing plans them. A group that
//   one gone PID forked (the daemon saw it, or a member still descends from it) keeps that PID's
//   context only, even where its members share another gone PID's group or session number: two
//   gone jobs in one process group are each kept by their own workers, and counted once.
// Kinship is the kernel's facts agreeing, never a number alone:
// - the daemon saw the gone PID fork it, or fork one of its ancestors, and then exit;
// - its process group or session is the gone PID's number, or it descends from the gone PID,
//   and that number is not another live process's now (a reused number's group is the new
//   process's); a zombie leader's uid and start time must agree with it too; where the daemon
//   saw the listed process end (ProcView::ends), it started within that process's life and
//   before any later process took the number.
// A gone PID the driver lists as a client (kind ServerClient) on a GPU where a live server of other
// processes' work is listed (DriverProcess::serves_clients) is kept by that server
// (Ghost::servers), not by any holder there: its context is the server's.
// Holds without an open-file id (no kcmp) each form a group of their own, and a process that
// descends from or shares the group of a listed process counts as its worker: a guess, and
// Ghost::exact says so.
GhostVerdict decide_ghosts(const ProcView& proc, const DriverReading& drivers,
                           const ListedIdentities& identities);

}  // namespace gpureap::core
