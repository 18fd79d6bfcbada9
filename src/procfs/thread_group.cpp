#include "procfs/thread_group.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>

#include "procfs/file_read.h"
#include "procfs/parsers.h"

namespace gpureap::procfs {
namespace {

std::optional<pid_t> task_id(const char* name) {
  pid_t tid = 0;
  const char* end = name + std::strlen(name);
  auto [p, ec] = std::from_chars(name, end, tid);
  if (ec != std::errc() || p != end || tid <= 0) return std::nullopt;
  return tid;
}

// A thread on its way out (a process ending thread by thread) keeps nothing alive.
bool runs(const core::ProcessStat& st) {
  return st.state != 'Z' && st.state != 'X' && !st.is_exiting();
}

}  // namespace

bool thread_runs(int proc_dirfd, pid_t pid, pid_t tid) {
  auto f = read_file_at(proc_dirfd, std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  if (!f.ok()) return false;
  auto st = parse_stat(f.data);
  return st && runs(*st);
}

std::optional<LiveThread> live_thread(int proc_dirfd, pid_t pid, int* failed) {
  int ignored = 0;
  int& err = failed ? *failed : ignored;
  std::string dir = std::to_string(pid) + "/task";
  int dfd = ::openat(proc_dirfd, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    if (errno != ENOENT && errno != ESRCH) err = errno;  // else the process is gone
    return std::nullopt;
  }
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    err = errno;
    ::close(dfd);
    return std::nullopt;
  }
  std::optional<LiveThread> out;
  while (dirent* e = ::readdir(d)) {
    auto tid = task_id(e->d_name);
    if (!tid || *tid == pid) continue;
    auto f = read_file_at(dfd, std::string(e->d_name) + "/stat");
    if (!f.ok()) {
      if (f.vanished() || f.denied()) continue;  // it ended meanwhile; or not ours to read
      err = f.error;
      break;
    }
    auto st = parse_stat(f.data);
    if (!st || !runs(*st)) continue;
    out = LiveThread{*tid, std::move(*st)};
    break;
  }
  ::closedir(d);
  return out;
}

std::optional<pid_t> thread_group_of(int proc_dirfd, pid_t tid) {
  if (tid <= 0) return std::nullopt;
  auto f = read_file_at(proc_dirfd, std::to_string(tid) + "/status");
  if (!f.ok()) return std::nullopt;
  auto tgid = parse_status(f.data).tgid;
  if (!tgid || *tgid <= 0 || *tgid == tid) return std::nullopt;
  return tgid;
}

}  // namespace gpureap::procfs
