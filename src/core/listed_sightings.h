#pragma once
// What a watcher of the driver's lists (the node's daemon) knows of the PIDs listed now, that
// a command's own single look cannot: when each listing was first seen, the process under its
// number then, and the ends of the numbers' GPU-file holders (core::ProcView's listed_since,
// listed_first_process and ends). A command that plans signals from its own scan takes them
// on, so that a process that took a gone job's number is the newcomer it is to the daemon, and
// `gpureap kill` and `doctor --fix` decide as a policy would. Each piece can only withhold
// trust: a number's process is disowned, or kin is denied; nothing is vouched for by it.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/gpu.h"
#include "core/snapshot.h"

namespace gpureap::core {

struct ListedSightings {
  std::optional<long long> boot_time;  // of the view they came from (ProcView::boot_time)
  bool in_child_pid_namespace = false;
  std::map<pid_t, uint64_t> since, first_process;
  std::map<pid_t, std::vector<ProcessEnd>> ends;
};

// The sightings `view` carries (a daemon's snapshot).
ListedSightings sightings_of(const ProcView& view);

// Why `sightings` cannot speak of `view`, empty when they can: boot ticks and PIDs compare
// only within one boot of one kernel, seen from the same PID namespace.
std::optional<std::string> sightings_mismatch(const ListedSightings& sightings,
                                              const ProcView& view);

// Takes on `sightings` for the PIDs `drivers` lists (every other PID's are no evidence now)
// where `view` lacks its own; a no-op when sightings_mismatch says why not.
void adopt_sightings(ProcView& view, const DriverReading& drivers,
                     const ListedSightings& sightings);

}  // namespace gpureap::core
