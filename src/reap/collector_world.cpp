#include "reap/collector_world.h"

#include "procfs/thread_group.h"
#include "reap/verifier.h"

namespace gpureap::reap {

bool CollectorWorld::signals_reach() const {
  return collector_.procfs().names_own_processes();
}

std::string CollectorWorld::proc_root() const {
  return collector_.procfs().root();
}

std::optional<pid_t> CollectorWorld::thread_group_of(pid_t tid) const {
  return procfs::thread_group_of(collector_.procfs().dirfd(), tid);
}

// The one place the reaper meets the collector's drivers: their report alone, without a /proc
// scan, joined with an empty view.
core::Snapshot CollectorWorld::driver_view() const {
  return driver_snapshot(collector_.read_drivers());
}

core::Snapshot CollectorWorld::collect() const {
  return collector_.collect();
}

}  // namespace gpureap::reap
