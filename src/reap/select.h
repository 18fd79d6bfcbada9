#pragma once
// Which processes a request reaches, and why: named PIDs, a GPU's holders, ghosts, their
// trees or process groups. Pure over one snapshot; the safety rules come after (planner.h).
#include <map>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"
#include "reap/plan.h"

namespace gpureap::reap {

struct Selection {
  std::map<pid_t, std::vector<Reason>> reasons;  // processes present in /proc
  std::vector<GoneListing> gone;                 // listed PIDs resolved to their keepers
  std::vector<std::string> notes;
  std::vector<NamedThread> threads;  // typed numbers that are threads: told, never chosen
};

// Fails only on a request that cannot mean anything (a GPU the driver does not have).
// `threads`: the typed numbers that are threads (they are told, never chosen).
core::Result<Selection> select_targets(const core::Snapshot& snapshot, const Request& request,
                                       const Caller& caller,
                                       const std::vector<NamedThread>& threads = {});

}  // namespace gpureap::reap
