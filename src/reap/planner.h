#pragma once
// Turns a request into a plan over one snapshot: selection (select.h), the --user filter,
// each target's details, memory and safety verdict (safety.h), and the GPUs' memory baseline.
#include <functional>
#include <optional>

#include "core/result.h"
#include "core/snapshot.h"
#include "reap/plan.h"

namespace gpureap::reap {

// The details of a process the snapshot read no details for (the collector reads them only
// for GPU holders and listed PIDs); empty when it is gone or unreadable.
using DetailsSource = std::function<std::optional<core::ProcessDetails>(const core::HostProcess&)>;

// Fails on a request that cannot mean anything (an unknown GPU or user). `threads`: the typed
// numbers that are threads of a process (select.h).
core::Result<Plan> make_plan(const core::Snapshot& snapshot, const Request& request,
                             const Caller& caller, const DetailsSource& details,
                             const std::vector<NamedThread>& threads = {});

}  // namespace gpureap::reap
