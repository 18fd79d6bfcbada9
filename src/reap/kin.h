#pragma once
// Family relations between the processes of one snapshot: children, descendants, process
// groups, and the live processes that keep a gone PID's GPU context alive.
#include <sys/types.h>

#include <map>
#include <optional>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::reap {

class Kin {
 public:
  explicit Kin(const core::Snapshot& snapshot);

  // Every descendant of pid (children, their children, ...), breadth first.
  std::vector<pid_t> descendants(pid_t pid) const;
  bool descends_from(const core::HostProcess& p, pid_t ancestor) const;
  // Every process whose process group is pgid.
  std::vector<pid_t> group_members(pid_t pgid) const;
  // A process that is not in /proc, or only as a zombie: it holds no file any more.
  bool is_gone(pid_t pid) const;
  // The live processes that keep gone PID `pid`'s contexts alive: they hold the device file
  // of a GPU it is listed on and descend from it or share its process group
  // (pgid == pid), as forked workers of a dead trainer do.
  std::vector<pid_t> keepers(pid_t pid) const;
  // Live unlisted holders of the GPUs `pid` is listed on that are not its keepers: they may
  // keep it too (a worker that changed its group), which only the user can judge.
  std::vector<pid_t> other_holders(pid_t pid) const;
  std::optional<unsigned> minor_of(unsigned gpu_index) const;

 private:
  bool holds_gpu_of(const core::HostProcess& p, const core::ProcessRow& listed) const;

  const core::Snapshot& snapshot_;
  std::map<pid_t, std::vector<pid_t>> children_;
};

}  // namespace gpureap::reap
