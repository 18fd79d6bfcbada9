#pragma once
// What a daemon without events learns from one scan to the next, so that it decides on the
// same kernel facts as the events mode (daemon/holder_tracker): a GPU-file holder, or a
// holder's parent, that a scan saw alive and the next saw gone (or a zombie, or another
// process under its number, by start time) ended, and a holder whose parent ended so is that
// parent's reparented child (core::ProcView::exited_parents, ends). Each scan's parent is
// /proc's ppid read with the child's and the parent's start times, so a reused number is never
// taken for the parent. An end is dated no later than the scan that saw it, nor than the start
// of the process that has the number since: nothing started after it counts as its kin.
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::engine {

class ScanLineage {
 public:
  // A scan (or a re-read of some processes) gave `view`, at `now_ticks` since boot.
  void observe(const core::ProcView& view, uint64_t now_ticks);

  const std::map<pid_t, pid_t>& exited_parents() const { return exited_parents_; }
  const std::map<pid_t, std::vector<core::ProcessEnd>>& ends() const { return ends_; }

 private:
  struct Seen {
    uint64_t start_ticks = 0;
    pid_t ppid = 0;
    bool holder = false;
  };
  void note_end(pid_t pid, const core::ProcessEnd& life);

  std::map<pid_t, Seen> watched_;  // the last view's live holders and their parents
  std::map<pid_t, pid_t> exited_parents_;
  std::map<pid_t, std::vector<core::ProcessEnd>> ends_;
  std::deque<pid_t> end_order_;  // oldest first, to bound ends_
};

}  // namespace gpureap::engine
