#pragma once
// Which processes belong to the job. gpureap is a child subreaper, so every process the job
// creates stays below gpureap in the parent tree, even after its parent dies or it calls
// setsid: ancestry read from /proc finds them all. Members are remembered with their start
// time, so one that escaped (no subreaper on an old kernel) is still known, and a recycled
// PID is never taken for a member.
#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/process.h"
#include "core/result.h"
#include "procfs/proc_fs.h"

namespace gpureap::supervise {

// Every process in `all` that descends from `root` (not `root` itself), in `all`'s order.
std::vector<core::ProcessStat> descendants_of(pid_t root,
                                              const std::vector<core::ProcessStat>& all);

// Neither a zombie nor dead: it can still hold files and memory.
bool is_alive(const core::ProcessStat& st);

// stat of every process under the proc root; vanished ones are skipped, and so are those whose
// stat cannot be read for what they are (unparseable, another user's under hidepid). An error
// where the root cannot be listed, or a stat could not be read for want of a descriptor or memory
// of gpureap's own (procfs/resource_shortage.h): a list cut short would read as processes gone.
core::Result<std::vector<core::ProcessStat>> read_all_stats(const procfs::ProcFs& proc);

struct JobMember {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  std::string comm;
};

// Shared by the main loop and the sampling engine's thread.
class JobMembers {
 public:
  explicit JobMembers(pid_t root) : root_(root) {}
  pid_t root() const { return root_; }

  void add(const core::ProcessStat& st);
  // Records every descendant of root in `all` and returns the live members: those
  // descendants plus earlier members still alive with the same start time.
  std::vector<core::ProcessStat> observe(const std::vector<core::ProcessStat>& all);
  // `start_ticks` empty: the process is gone, so the PID alone identifies it.
  bool contains(pid_t pid, std::optional<uint64_t> start_ticks) const;
  std::vector<JobMember> all() const;

 private:
  void add_locked(const core::ProcessStat& st);
  pid_t root_;
  mutable std::mutex mutex_;
  std::vector<JobMember> members_;  // sorted by pid; a recycled PID appears once per life
};

}  // namespace gpureap::supervise
