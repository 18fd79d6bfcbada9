#pragma once
// Ends the job's processes: SIGTERM (with SIGCONT, so a stopped process acts on it), then
// SIGKILL. Every signal goes through a pidfd after checking the start time, so a PID that
// was recycled since the scan is never hit. Remembers what it ended, for the report.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/process.h"
#include "core/snapshot.h"
#include "procfs/proc_fs.h"
#include "supervise/job_tree.h"
#include "supervise/run_report.h"

namespace gpureap::supervise {

// Sends `signal` to the process `who` describes, only while it is still that process.
// False when it is gone (or recycled, a thread's id now included).
bool signal_member(const procfs::ProcFs& proc, const core::ProcessStat& who, int signal);

class Teardown {
 public:
  Teardown(const procfs::ProcFs& proc, JobMembers& members, pid_t command_pid)
      : proc_(proc), members_(members), command_pid_(command_pid) {}

  // Remembers which GPU device files each process holds in `snapshot`, for the report.
  void note_devices(const core::Snapshot& snapshot);
  // The job's live processes now (CMD included while it lives); an error where /proc could not
  // be read whole (read_all_stats), never a list that would read as the job gone.
  core::Result<std::vector<core::ProcessStat>> scan();
  // SIGTERM + SIGCONT to each live process not yet asked; all but CMD become leftovers.
  void terminate(const std::vector<core::ProcessStat>& live);
  // SIGKILL to every live process; while CMD is unreaped (its PID, and so its group id,
  // cannot be recycled) also to its process group, for processes forked since the scan.
  void kill(const std::vector<core::ProcessStat>& live, bool command_unreaped);
  // What gpureap ended (or failed to end: still in `live`, the last list read), with their
  // command lines.
  std::vector<Leftover> leftovers(const std::vector<core::ProcessStat>& live) const;
  // The live processes as leftovers that gpureap leaves alone (--keep-descendants).
  std::vector<Leftover> describe(const std::vector<core::ProcessStat>& live) const;

 private:
  Leftover& record(const core::ProcessStat& st);
  Leftover new_record(const core::ProcessStat& st) const;

  const procfs::ProcFs& proc_;
  JobMembers& members_;
  pid_t command_pid_;
  using Key = std::pair<pid_t, uint64_t>;  // pid, start ticks
  std::map<Key, Leftover> ended_;
  std::map<Key, bool> asked_;  // processes already sent SIGTERM
  std::map<Key, std::vector<std::string>> devices_;
};

}  // namespace gpureap::supervise
