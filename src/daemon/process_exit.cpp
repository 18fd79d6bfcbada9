#include "daemon/process_exit.h"

#include <chrono>
#include <string>
#include <thread>

#include "engine/ended_processes.h"
#include "procfs/dir_entries.h"
#include "procfs/file_read.h"
#include "procfs/parsers.h"

namespace gpureap::daemon {
namespace {

constexpr int kRereads = 2;
constexpr std::chrono::milliseconds kRereadGap{1};

bool thread_lives(const core::ProcessStat& st) {
  return !engine::dead(st) && !engine::exiting(st);
}

// A stat read from a task the kernel released while it was being read counts no thread (its
// signal struct is gone; a task not yet released counts itself at least). A non-leader
// thread's exec() releases the old leader right after handing its PID to the exec'ing thread,
// so a read begun on the old leader reads so, a zombie of no thread, while the process runs on;
// a reaped process may read so too. Read again, the PID names the exec'ing thread, or nothing.
bool released_while_read(const core::ProcessStat& st) {
  return st.num_threads == 0;
}

// The leader's stat, read again after a moment while it shows the PID gone or a released task:
// either may be the old leader of an exec from another thread, and the next read then names
// the exec'ing thread; a process that ended stays gone.
core::Result<std::optional<core::ProcessStat>> read_leader(const procfs::ProcFs& proc, pid_t pid) {
  auto leader = proc.read_stat(pid);
  for (int again = 0; again < kRereads && leader && (!*leader || released_while_read(**leader));
       ++again) {
    std::this_thread::sleep_for(kRereadGap);
    leader = proc.read_stat(pid);
  }
  return leader;
}

}  // namespace

ProcessExit check_exit(const procfs::ProcFs& proc, pid_t pid, std::optional<uint64_t> start_ticks,
                       std::optional<uint64_t> exit_ticks) {
  auto leader = read_leader(proc, pid);
  if (!leader) return ProcessExit::ThreadsRun;                        // garbage: cannot tell
  if (!*leader) return ProcessExit::Ended;                            // gone
  if (released_while_read(**leader)) return ProcessExit::ThreadsRun;  // still: cannot tell
  const uint64_t now_start = (*leader)->start_ticks;
  if ((start_ticks && now_start != *start_ticks) || (exit_ticks && now_start > *exit_ticks))
    return ProcessExit::Replaced;
  // Its stat is then a live thread's (ProcFs::read_process_stat): the leader is what ended.
  if ((*leader)->leader_exited) return ProcessExit::ThreadsRun;
  if (thread_lives(**leader)) return ProcessExit::LeaderRuns;
  // The leader is dead or exiting: any other thread that lives keeps the process.
  const std::string tasks = std::to_string(pid) + "/task";
  for (const auto& tid : procfs::list_dir(proc.root() + "/" + tasks)) {
    if (tid == std::to_string(pid)) continue;
    auto f = procfs::read_file_at(proc.dirfd(), tasks + "/" + tid + "/stat");
    if (!f.ok()) continue;  // ended meanwhile
    auto st = procfs::parse_stat(f.data);
    if (st && thread_lives(*st)) return ProcessExit::ThreadsRun;
  }
  // The kernel still counts another thread: one exec()ing (it takes the PID once the leader is
  // a zombie, and reads as neither alive nor listed for a moment) or one still ending, whose own
  // exit is reported later. A process whose every thread has gone counts its leader alone.
  if ((*leader)->num_threads > 1) return ProcessExit::ThreadsRun;
  return ProcessExit::Ended;
}

}  // namespace gpureap::daemon
