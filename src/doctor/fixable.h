#pragma once
// Which findings `doctor --fix` may remedy by ending processes: the keepers of ghost memory and
// leftovers of dead jobs. A paused job (a stopped holder) is alive and needs a person: resume it
// or end it by name. Everything else needs a person too (or `gpureap reset`).
#include <sys/types.h>

#include <vector>

#include "core/anomaly.h"
#include "doctor/finding.h"

namespace gpureap::doctor {

// A process to end, and the anomaly it was chosen for. A gone PID is passed as it is: the
// reaper resolves it to its keepers.
struct Fixable {
  pid_t pid = 0;
  core::Anomaly anomaly = core::Anomaly::Orphan;
  // A process of a stalled distributed job (stalled-job), not a ghost: `anomaly` is unused.
  bool stalled_job = false;
  bool operator==(const Fixable&) const = default;
};

// Critical no-such-process, orphan holders, and inherited holders above info (an info one is a
// worker of a job that runs), as findings or as facets of one; every process of a stalled job
// (its launcher and what descends from it: the remedy ends the whole job); one per PID, sorted
// by PID.
std::vector<Fixable> fixable(const std::vector<Finding>& findings);

}  // namespace gpureap::doctor
