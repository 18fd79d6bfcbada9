#include "procfs/proc_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

#include "procfs/dir_entries.h"
#include "procfs/file_read.h"
#include "procfs/parsers.h"
#include "procfs/resource_shortage.h"
#include "procfs/thread_group.h"
#include "procfs/user_names.h"

namespace gpureap::procfs {
namespace {

// The initial PID namespace always has this inode (PROC_PID_INIT_INO).
constexpr unsigned long long kInitPidNamespaceInode = 0xEFFFFFFCULL;

bool all_digits(const char* s) {
  if (!*s) return false;
  for (; *s; ++s)
    if (!std::isdigit(static_cast<unsigned char>(*s))) return false;
  return true;
}

}  // namespace

core::Result<ProcFs> ProcFs::open(const std::string& root) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return core::Error{
        "cannot open proc root " + root + ": " + std::strerror(errno),
        is_resource_shortage(errno)
            ? shortage_remedy(errno)
            : "pass a procfs mount or a directory laid out like one with --proc-root",
        errno};
  ProcFs p;
  p.root_ = root;
  p.fd_ = std::shared_ptr<int>(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  return p;
}

core::Result<std::vector<pid_t>> ProcFs::list_pids() const {
  auto failed = [&](int err) {
    return core::Error{"cannot list the processes in " + root_ + ": " + std::strerror(err),
                       is_resource_shortage(err) ? shortage_remedy(err) : "", err};
  };
  std::vector<pid_t> pids;
  int dfd = ::dup(*fd_);
  if (dfd < 0) return failed(errno);
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    const int err = errno;
    ::close(dfd);
    return failed(err);
  }
  ::rewinddir(d);
  const int err = for_each_entry(d, [&](const char* name) {
    if (all_digits(name)) pids.push_back(static_cast<pid_t>(std::atol(name)));
    return true;
  });
  ::closedir(d);
  if (err != 0) return failed(err);
  return pids;
}

core::Result<std::optional<StatRead>> ProcFs::read_process_stat(pid_t pid) const {
  auto f = read_file_at(*fd_, std::to_string(pid) + "/stat");
  if (!f.ok()) {
    if (f.vanished()) return std::optional<StatRead>{};
    return core::Error{
        "cannot read /proc/" + std::to_string(pid) +
            "/stat: " + (f.error == ENOTSUP ? "it is not a regular file" : std::strerror(f.error)),
        is_resource_shortage(f.error) ? shortage_remedy(f.error) : "", f.error};
  }
  auto st = parse_stat(f.data);
  if (!st) return core::Error{"process " + std::to_string(pid) + ": " + st.error().message, ""};
  StatRead out{std::move(*st), 0};
  // A zombie leader still counts its live threads (and itself) in num_threads: only then is
  // the task list read, so an ordinary zombie costs nothing more.
  if (out.stat.is_zombie() && out.stat.num_threads > 1 && out.stat.is_exiting()) {
    int failed = 0;
    if (auto t = live_thread(*fd_, pid, &failed)) {
      out.stat.state = t->stat.state;
      out.stat.rss_pages = t->stat.rss_pages;  // the leader's reads 0: it has let go of the mm
      // The leader's PF_EXITING is its own end: the process ends when this thread does.
      out.stat.flags = t->stat.flags;
      out.stat.leader_exited = true;
      out.stat.wait_status.reset();  // the leader's own exit: the process runs on
      out.fd_task = t->tid;
    } else if (is_resource_shortage(failed)) {
      // A process running on its threads, unread, is no zombie that holds nothing.
      return core::Error{"cannot read /proc/" + std::to_string(pid) +
                             "/task (its main thread has exited): " + std::strerror(failed),
                         shortage_remedy(failed), failed};
    }
  }
  return std::optional<StatRead>(std::move(out));
}

core::Result<std::optional<core::ProcessStat>> ProcFs::read_stat(pid_t pid) const {
  auto r = read_process_stat(pid);
  if (!r) return r.error();
  if (!*r) return std::optional<core::ProcessStat>{};
  return std::optional<core::ProcessStat>(std::move((*r)->stat));
}

namespace {

// Root's, and writable by nobody else.
bool root_only(const struct stat& st) {
  return st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

}  // namespace

// Whether the process at `dir` shares gpureap's user namespace. In a namespace of its own any
// user is root and may bind-mount a file of its choosing over a root-owned program's path:
// what the file and its directory look like from inside vouches for nothing.
bool ProcFs::in_own_user_namespace(const std::string& dir) const {
  struct stat own {
  }, theirs{};
  return ::fstatat(*fd_, "self/ns/user", &own, 0) == 0 &&
         ::fstatat(*fd_, (dir + "/ns/user").c_str(), &theirs, 0) == 0 &&
         own.st_dev == theirs.st_dev && own.st_ino == theirs.st_ino;
}

std::optional<core::ExecutableFile> ProcFs::read_exe(pid_t pid) const {
  return read_exe_at(std::to_string(pid));
}

std::optional<core::ExecutableFile> ProcFs::read_exe_at(const std::string& dir) const {
  char buf[4096];
  ssize_t n = ::readlinkat(*fd_, (dir + "/exe").c_str(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  core::ExecutableFile exe;
  exe.path.assign(buf, static_cast<size_t>(n));
  if (exe.path.ends_with(" (deleted)")) exe.path.resize(exe.path.size() - 10);
  struct stat file {
  }, parent{};
  auto slash = exe.path.rfind('/');
  if (slash == std::string::npos || exe.path.front() != '/') return exe;
  // The directory as the process sees it: a container's /usr/bin, not the host's.
  std::string parent_dir = dir + "/root" + exe.path.substr(0, slash == 0 ? 1 : slash);
  exe.system_installed = ::fstatat(*fd_, (dir + "/exe").c_str(), &file, 0) == 0 &&
                         S_ISREG(file.st_mode) && root_only(file) &&
                         ::fstatat(*fd_, parent_dir.c_str(), &parent, 0) == 0 &&
                         S_ISDIR(parent.st_mode) && root_only(parent) && in_own_user_namespace(dir);
  return exe;
}

std::optional<core::ContainerInfo> ProcFs::read_container(pid_t pid) const {
  auto cgroup = read_file_at(*fd_, std::to_string(pid) + "/cgroup");
  return cgroup.ok() ? parse_cgroup(cgroup.data) : std::nullopt;
}

std::optional<int> ProcFs::read_exit_status(pid_t pid) const {
  auto stat = read_file_at(*fd_, std::to_string(pid) + "/stat");
  return stat.ok() ? parse_exit_status(stat.data) : std::nullopt;
}

std::optional<core::RankLabels> ProcFs::read_rank_labels(pid_t pid) const {
  // The labels are near the start of an environment; a huge one is read only that far.
  auto environ = read_file_at(*fd_, std::to_string(pid) + "/environ", 256u << 10);
  return environ.ok() ? parse_rank_labels(environ.data) : std::nullopt;
}

namespace {

// Who runs it, from its status: all of the details that a zombie still has.
void read_owner_from(const std::string& status, core::ProcessDetails& d) {
  auto s = parse_status(status);
  d.uid = s.uid;
  d.euid = s.euid;
  d.ns_pids = std::move(s.ns_pids);
  if (d.uid) d.user = user_name(*d.uid);
}

}  // namespace

DetailsRead ProcFs::read_owner(pid_t pid) const {
  DetailsRead out;
  auto status = read_file_at(*fd_, std::to_string(pid) + "/status");
  if (status.vanished()) return out;
  core::ProcessDetails d;
  if (status.ok())
    read_owner_from(status.data, d);
  else
    out.complete = false;
  out.details = std::move(d);
  return out;
}

DetailsRead ProcFs::read_details(pid_t pid, bool want_wchan) const {
  DetailsRead out;
  std::string dir = std::to_string(pid) + "/";
  core::ProcessDetails d;

  auto status = read_file_at(*fd_, dir + "status");
  if (status.vanished()) return out;
  if (status.ok())
    read_owner_from(status.data, d);
  else
    out.complete = false;
  auto cmdline = read_file_at(*fd_, dir + "cmdline");
  // An empty command line: a zombie, or a leader that has exited while a thread runs on. Its
  // program and command line are then that thread's (they share one memory map).
  std::string task_dir = dir;
  if (cmdline.ok() && cmdline.data.empty())
    if (auto t = live_thread(*fd_, pid)) {
      task_dir = dir + "task/" + std::to_string(t->tid) + "/";
      cmdline = read_file_at(*fd_, task_dir + "cmdline");
    }
  if (cmdline.ok())
    d.cmdline = parse_cmdline(cmdline.data);
  else if (cmdline.denied())
    out.complete = false;

  auto cgroup = read_file_at(*fd_, dir + "cgroup");
  if (cgroup.ok())
    d.container = parse_cgroup(cgroup.data);
  else if (cgroup.denied())
    out.complete = false;

  d.exe = read_exe_at(task_dir.substr(0, task_dir.size() - 1));

  if (want_wchan) {
    auto wchan = read_file_at(*fd_, task_dir + "wchan");
    if (wchan.ok())
      d.wchan = parse_wchan(wchan.data);
    else if (wchan.denied())
      out.complete = false;
  }
  out.details = std::move(d);
  return out;
}

std::optional<long long> ProcFs::boot_time() const {
  auto f = read_file_at(*fd_, "stat");
  return f.ok() ? parse_boot_time(f.data) : std::nullopt;
}

std::optional<std::string> ProcFs::boot_id() const {
  auto f = read_file_at(*fd_, "sys/kernel/random/boot_id", 128);
  if (!f.ok()) return std::nullopt;
  while (!f.data.empty() && (f.data.back() == '\n' || f.data.back() == ' ')) f.data.pop_back();
  if (f.data.empty()) return std::nullopt;
  return f.data;
}

uint64_t ProcFs::pid_max() const {
  auto f = read_file_at(*fd_, "sys/kernel/pid_max");
  if (f.ok()) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(f.data.c_str(), &end, 10);
    if (end != f.data.c_str() && v > 0) return v;
  }
  return 4194304;  // PID_MAX_LIMIT on 64-bit kernels
}

std::optional<uint64_t> ProcFs::pid_namespace() const {
  char link[128];
  ssize_t n = ::readlinkat(*fd_, "self/ns/pid", link, sizeof link - 1);
  if (n <= 0) return std::nullopt;
  link[n] = '\0';
  unsigned long long inode = 0;
  if (std::sscanf(link, "pid:[%llu]", &inode) != 1) return std::nullopt;
  return inode;
}

std::optional<bool> ProcFs::in_child_pid_namespace() const {
  auto inode = pid_namespace();
  if (!inode) return std::nullopt;
  return *inode != kInitPidNamespaceInode;
}

bool ProcFs::is_procfs() const {
  struct statfs fs {};
  return ::fstatfs(*fd_, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
}

bool ProcFs::names_own_processes() const {
  char buf[64] = {};
  ssize_t n = ::readlinkat(*fd_, "self", buf, sizeof buf - 1);
  return n > 0 && std::string(buf, static_cast<size_t>(n)) == std::to_string(::getpid());
}

}  // namespace gpureap::procfs
