#pragma once
// A process lives while any of its threads does. When its main thread ends first (a job that
// calls pthread_exit() from main), /proc/PID/stat shows the leader as a zombie and
// /proc/PID/fd is empty, yet the process runs on and its fd table (shared by its threads)
// still holds its files. /proc/PID/task/TID shows a live thread: its state, and that table.
// The leader's flags say PF_EXITING (set when a task begins to exit, kept while it is a zombie)
// for as long as the process runs on: what they say is the leader's end, not the process's. So
// ProcFs::read_process_stat takes state and flags from the live thread and records the
// leader's end apart (core::ProcessStat::leader_exited).
#include <sys/types.h>

#include <optional>

#include "core/process.h"

namespace gpureap::procfs {

struct LiveThread {
  pid_t tid = 0;
  core::ProcessStat stat;  // the thread's own /proc/PID/task/TID/stat
};

// A thread of `pid` other than its leader that has not begun to exit, from the task list under
// the proc root `proc_dirfd`; empty when there is none (a true zombie, or the process is gone).
// `failed`, where given, gets the errno where the task list or a thread's stat could not be read
// (gpureap out of file descriptors): then empty says nothing, and a caller that would take the
// process for a true zombie must not.
std::optional<LiveThread> live_thread(int proc_dirfd, pid_t pid, int* failed = nullptr);

// Whether thread `tid` of `pid` runs still: /proc shows it, neither a zombie nor past the start
// of its exit. A thread in do_exit() has let go of its fd table, or soon will: a listing of the
// table read through its entry ends early, and silently.
bool thread_runs(int proc_dirfd, pid_t pid, pid_t tid);

// The process that `tid` is a thread of, when it is one of its threads other than the leader: a
// thread's /proc/TID answers though /proc does not list it, and its stat is the thread's own.
// The kernel says whose it is (the Tgid of /proc/TID/status), never a name. Empty for a
// process (its leader), and where there is no such task or its status cannot be read.
std::optional<pid_t> thread_group_of(int proc_dirfd, pid_t tid);

}  // namespace gpureap::procfs
