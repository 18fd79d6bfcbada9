#pragma once
// The ghost verdict: which live process keeps which context alive. Computed once by the join
// from the open-file groups of the fd scan and the driver's lists; every consumer (ps, top,
// doctor, kill, policies, metrics, JSON) reads its result from the Snapshot.
#include <map>

#include "core/snapshot.h"

namespace gpureap::core {

struct GhostVerdict {
  std::vector<Ghost> ghosts;                              // gone PIDs of this namespace, by pid
  std::map<pid_t, std::vector<pid_t>> shares_context_of;  // worker -> live listed owners
  std::map<pid_t, std::vector<pid_t>> keeps;              // keeper -> gone PIDs
};

// Per GPU, every open file description of its device file is one group of fds:
// - a group with a live member the driver lists on that GPU belongs to that process; its
//   other members are the job's workers;
// - a group whose member the driver lists on another GPU only, and that is no kin of a gone
//   PID there, is that process's own (CUDA opens every visible GPU's file);
// - any other group, on a GPU where a gone PID is listed, keeps that PID's context: the groups
//   of its kin (its group, session or children) when there are any, else all of them.
// A gone PID the driver lists as a client (kind Mps) on a GPU where a live server of other
// processes' work is listed (DriverProcess::serves_clients) is kept by that server
// (Ghost::servers), not by any holder there: its context is the server's.
// Holds without an open-file id (no kcmp) each form a group of their own, and a process that
// descends from or shares the group of a listed process counts as its worker: a guess, and
// Ghost::exact says so.
GhostVerdict decide_ghosts(const ProcView& proc, const DriverReading& drivers);

}  // namespace gpureap::core
