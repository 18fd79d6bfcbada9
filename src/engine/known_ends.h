#pragma once
// The ends and reparentings a collection hands to the join (core::ProcView::ends,
// exited_parents), from every source the engine has: the daemon's holder tracker (events) and
// what one view to the next shows (ScanLineage, which also covers what happened before the
// tracker started: a worker forked before the daemon). Both sources bound their records; the
// ends of the PIDs the driver lists are kept here while they stay listed, so that a flood of
// other processes' ends never evicts the record that says who a listed number's owner was.
#include <sys/types.h>

#include <map>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::engine {

using Ends = std::map<pid_t, std::vector<core::ProcessEnd>>;

// `from`'s lives added to `into`'s, one per start time (the first source's wins: the events'
// end times are the exact ones), oldest first, the latest few of each number.
void merge_ends(Ends& into, const Ends& from);

// `from`'s reparentings added where `into` has none for the child.
void merge_exited_parents(std::map<pid_t, pid_t>& into, const std::map<pid_t, pid_t>& from);

class ListedEnds {
 public:
  // Keeps `ends`' records of the PIDs in `listed` (ProcView::listed_since), drops those no
  // longer listed, and adds every kept record to `ends`.
  void keep(Ends& ends, const std::map<pid_t, uint64_t>& listed);

 private:
  Ends kept_;
};

}  // namespace gpureap::engine
