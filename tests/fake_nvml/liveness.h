#pragma once
// Which of a GPU's scenario processes the double lists right now. A context lives while
// any of its holder PIDs lives (as forked children keep a dead parent's context); once none
// does it is released, after release_delay_ms counted from the first time a double saw it
// dead. Every gpureap run loads a fresh double, so that first sighting is kept in a state
// file beside the scenario.
#include <string>
#include <vector>

#include "scenario.h"

namespace fake_nvml {

// Alive: <proc_root>/<pid>/stat exists and the state is not zombie/dead.
bool process_alive(const std::string& proc_root, unsigned pid);

std::vector<const Process*> listed_processes(const Scenario& scenario, unsigned gpu_index);

}  // namespace fake_nvml
