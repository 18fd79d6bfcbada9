#pragma once
// The one sentence that says a snapshot's view is incomplete (processes whose open files
// could not be read), for every screen that shows a snapshot: ps, ps --watch, top, kill, policy.
#include <string>

#include "core/snapshot.h"

namespace gpureap::output {

// Why the view is incomplete, with what to do: the holder scan's failures (gpureap ran out of
// file descriptors or memory), then "N processes could not be inspected; run as root or grant
// CAP_SYS_PTRACE"; empty when the view is complete.
std::string incomplete_reason(const core::Snapshot& snapshot);
// "view incomplete: " and the reason; empty when the view is complete.
std::string view_incomplete(const core::Snapshot& snapshot);

}  // namespace gpureap::output
