#pragma once
// ProcFs(root): reads processes from a procfs mount (default /proc; tests use fixture trees).
// A process that vanishes mid-read is normal and reported as "gone", never as an error.
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/process.h"
#include "core/result.h"

namespace gpureap::procfs {

// A process's stat as its live threads make it, and the task whose fd table is the process's.
struct StatRead {
  core::ProcessStat stat;
  // 0: the process's own (/proc/PID/fd). Else a live thread's TID: its main thread has exited
  // and the table is read through /proc/PID/task/TID (see thread_group.h).
  pid_t fd_task = 0;
};

struct DetailsRead {
  std::optional<core::ProcessDetails> details;  // empty: the process vanished
  bool complete = true;                         // false: a file could not be read (permission)
};

class ProcFs {
 public:
  static core::Result<ProcFs> open(const std::string& root);

  const std::string& root() const { return root_; }
  int dirfd() const { return *fd_; }

  // Every PID in the root; an error (what to do) where the root could not be listed: a list
  // cut short would read as processes that do not exist.
  core::Result<std::vector<pid_t>> list_pids() const;
  // Empty optional: the process is gone. Error: its stat is garbage, or could not be read (the
  // error's code says why: a resource shortage of gpureap's own, procfs/resource_shortage.h). A
  // process whose main thread has exited while another thread runs is alive: its state, flags
  // (exiting only when that thread is) and resident size are that thread's, its identity (PID,
  // start time, parent, group) the leader's, and ProcessStat::leader_exited says so. A true
  // zombie stays 'Z'. Every consumer reads this, so all see the same process.
  core::Result<std::optional<StatRead>> read_process_stat(pid_t pid) const;
  core::Result<std::optional<core::ProcessStat>> read_stat(pid_t pid) const;
  // A zombie's wait status (parse_exit_status); empty when it is gone or the field unreadable.
  std::optional<int> read_exit_status(pid_t pid) const;
  DetailsRead read_details(pid_t pid, bool want_wchan) const;
  // Its uid, euid, user and NSpid alone, from /proc/PID/status: what a zombie keeps of its
  // details (its command line, program, environment and files are gone), for one read.
  DetailsRead read_owner(pid_t pid) const;
  // The program it runs, and whether that file is a system-installed one; empty when the
  // link cannot be read.
  std::optional<core::ExecutableFile> read_exe(pid_t pid) const;
  // The rank labels of its environment (core/rank_labels.h); empty when it has none, when it
  // is gone, or when its environment cannot be read (another user's, without privilege).
  std::optional<core::RankLabels> read_rank_labels(pid_t pid) const;
  // The container its cgroup names (unverified), alone: empty outside one, or when it is gone.
  std::optional<core::ContainerInfo> read_container(pid_t pid) const;

  std::optional<long long> boot_time() const;  // seconds since the epoch
  // This boot's random ID (sys/kernel/random/boot_id), empty where unreadable: unlike
  // boot_time, no clock change moves it.
  std::optional<std::string> boot_id() const;
  uint64_t pid_max() const;
  // Whether the procfs mount belongs to a PID namespace other than the initial one (gpureap
  // runs in a container); empty when it cannot tell.
  std::optional<bool> in_child_pid_namespace() const;
  // The inode of the PID namespace of this procfs's PIDs (self/ns/pid), empty where unreadable.
  std::optional<uint64_t> pid_namespace() const;
  // The root is a proc file system (not a tree of files laid out like one).
  bool is_procfs() const;
  // Whether its PIDs are gpureap's own (its `self` is this process): signals go to PIDs of
  // gpureap's namespace, and a procfs of another namespace, or a fixture tree, names other
  // processes by those numbers.
  bool names_own_processes() const;

 private:
  // The same for "PID" or "PID/task/TID" (a live thread of a process whose leader exited).
  std::optional<core::ExecutableFile> read_exe_at(const std::string& dir) const;
  bool in_own_user_namespace(const std::string& dir) const;

  std::string root_;
  std::shared_ptr<int> fd_;
};

}  // namespace gpureap::procfs
