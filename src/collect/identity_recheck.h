#pragma once
// Whether the processes a snapshot names are still those processes. A snapshot served by the
// daemon is as old as its last sample (or, for what was read from /proc, its last scan); since
// then one may have ended and its number gone to another process. Advice built on it ("gpureap
// kill 4242") would then name the newcomer, so a command reads again, on the kernel's word (the
// start time), every live process it is about to name before it answers from that snapshot.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::collect {

struct ChangedProcess {
  pid_t pid = 0;
  std::string comm;                      // as the snapshot read it
  std::optional<std::string> successor;  // the name of the process that has the number now
};

// The first of `pids` that `snapshot` shows as a live process and that is not that process now:
// it has ended (no successor), or its number is another process's. Empty when each is still the
// process the snapshot read, or when `proc_root` cannot be read (nothing better is known then).
std::optional<ChangedProcess> first_changed(const core::Snapshot& snapshot,
                                            const std::vector<pid_t>& pids,
                                            const std::string& proc_root);

}  // namespace gpureap::collect
