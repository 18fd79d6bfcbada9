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
  // The live processes that keep gone PID `pid`'s contexts alive (the snapshot's ghost
  // verdict): the unlisted keepers, then listed processes that may also hold its files.
  std::vector<pid_t> keepers(pid_t pid) const;
  // Live holders of its GPUs' files that are no kin of it while kin keepers exist: they may
  // keep it too, which only the user can judge.
  std::vector<pid_t> other_holders(pid_t pid) const;

 private:
  const core::Snapshot& snapshot_;
  std::map<pid_t, std::vector<pid_t>> children_;
};

}  // namespace gpureap::reap
