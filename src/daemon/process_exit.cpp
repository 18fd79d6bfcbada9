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

constexpr int kGoneRereads = 2;
constexpr std::chrono::milliseconds kGoneRereadGap{1};

bool thread_lives(const core::ProcessStat& st) {
  return !engine::dead(st) && !engine::exiting(st);
}

}  // namespace

ProcessExit check_exit(const procfs::ProcFs& proc, pid_t pid, std::optional<uint64_t> start_ticks) {
  auto leader = proc.read_stat(pid);
  // An exec from another thread hands the PID over to it: for a moment in between, /proc may
  // have no entry under the PID. It is gone only if it stays so.
  for (int again = 0; again < kGoneRereads && leader && !*leader; ++again) {
    std::this_thread::sleep_for(kGoneRereadGap);
    leader = proc.read_stat(pid);
  }
  if (!leader) return ProcessExit::ThreadsRun;  // garbage: cannot tell
  if (!*leader) return ProcessExit::Ended;      // gone
  if (start_ticks && (*leader)->start_ticks != *start_ticks) return ProcessExit::Ended;  // reused
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
