#pragma once
// What the reaper reads of the machine it acts on, and nothing more: one process's stat (the
// start time is checked before every signal) and details, the drivers' lists and used memory
// (polled until the memory is back), and one full collection at the end (to name who still
// holds what). The reaper never reaches into a collector: `CollectorWorld` adapts one, and
// tests give their own.
#include <sys/types.h>

#include <optional>
#include <string>

#include "core/process.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "procfs/proc_fs.h"

namespace gpureap::reap {

// The processes, one at a time.
class ProcessProbe {
 public:
  virtual ~ProcessProbe() = default;
  // /proc/PID/stat: empty when there is no such process; an error when it cannot be read.
  virtual core::Result<std::optional<core::ProcessStat>> stat(pid_t pid) const = 0;
  // cmdline, program, wchan (when asked): what a plan and a survivor's report name; empty when
  // the process is gone.
  virtual std::optional<core::ProcessDetails> details(pid_t pid, bool want_wchan) const = 0;
  // The process `tid` is a thread of, when it is a thread other than its leader (the kernel's
  // word, procfs/thread_group.h); empty for a process, or no such task. /proc/TID/stat answers
  // for a thread as for a process, and kill() by a thread's id signals its whole process.
  virtual std::optional<pid_t> thread_group_of(pid_t tid) const = 0;
};

// A probe over a procfs root; the procfs must outlive it.
class ProcFsProbe final : public ProcessProbe {
 public:
  explicit ProcFsProbe(const procfs::ProcFs& proc) : proc_(proc) {}
  core::Result<std::optional<core::ProcessStat>> stat(pid_t pid) const override;
  std::optional<core::ProcessDetails> details(pid_t pid, bool want_wchan) const override;
  std::optional<pid_t> thread_group_of(pid_t tid) const override;

 private:
  const procfs::ProcFs& proc_;
};

// Everything a reap reads.
class World : public ProcessProbe {
 public:
  // Whether the PIDs read here are the ones kill() reaches: the procfs is gpureap's own PID
  // namespace's (not another namespace's, nor a fixture tree).
  virtual bool signals_reach() const = 0;
  // Where the processes are read from, for messages.
  virtual std::string proc_root() const = 0;
  // The drivers' lists and used memory now, joined with an empty /proc view: cheap enough to
  // poll.
  virtual core::Snapshot driver_view() const = 0;
  // One full collection: /proc and the drivers, joined.
  virtual core::Snapshot collect() const = 0;
};

}  // namespace gpureap::reap
