#pragma once
// The one sentence that says a snapshot's view is incomplete (processes whose open files
// could not be read), for every screen that shows a snapshot: ps, ps --watch, kill.
#include <string>

#include "core/snapshot.h"

namespace gpureap::output {

// "view incomplete: N processes could not be inspected; run as root or grant CAP_SYS_PTRACE";
// empty when the view is complete.
std::string view_incomplete(const core::Snapshot& snapshot);

}  // namespace gpureap::output
