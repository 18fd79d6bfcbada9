#include "procfs/fd_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "procfs/dir_entries.h"
#include "procfs/file_read.h"
#include "procfs/parsers.h"
#include "procfs/thread_group.h"

namespace gpureap::procfs {
namespace {

// Threads that end one after another while the table is read through each: a process whose
// threads keep ending that fast is read as gone, as it soon is.
constexpr int kTableTaskTries = 8;

// What the matcher compares: the type, the node's number, the file's device and inode.
struct stat as_stat(const struct statx& sx) {
  struct stat st {};
  st.st_mode = sx.stx_mode;
  st.st_ino = sx.stx_ino;
  st.st_dev = ::makedev(sx.stx_dev_major, sx.stx_dev_minor);
  st.st_rdev = ::makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
  return st;
}

// The kernel refuses this fd's link itself (the process is protected from ptrace), not only
// the attributes of the file behind it (a security module's rule on that one file).
bool link_refused(int dfd, const char* name) {
  char link[8];
  return ::readlinkat(dfd, name, link, sizeof link) < 0 && (errno == EACCES || errno == EPERM);
}

// Opened with O_PATH: it names the file and opens nothing. Unknown (no fdinfo, as in a fixture
// tree) counts as opened, as every fd did before fdinfo was read.
bool opened_as_path(int proc_dirfd, const std::string& table, const char* fd) {
  auto info = read_file_at(proc_dirfd, table + "/fdinfo/" + fd);
  if (!info.ok()) return false;
  auto flags = parse_fdinfo_flags(info.data);
  return flags && (*flags & O_PATH) != 0;
}

// Opens the table's fd folder; false (with `out` saying why) where it cannot be.
bool open_table(int proc_dirfd, const std::string& table, FdScan& out, int& dfd) {
  dfd = ::openat(proc_dirfd, (table + "/fd").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) return true;
  if (errno == EACCES || errno == EPERM)
    out.readable = false;
  else if (errno == ENOENT || errno == ESRCH)
    out.vanished = true;
  else
    out.failed = errno;  // what it holds is unknown, not nothing
  return false;
}

// Which table is read: the process's (through /proc/PID, or a live thread's entry where the
// main thread has exited), or a thread's own.
struct Table {
  pid_t pid = 0;
  pid_t task = 0;    // whose entry shows it: 0 for /proc/PID
  pid_t thread = 0;  // a thread's own table (DeviceHold::thread), else 0
  std::string folder() const { return table_entry(pid, task); }
};

// What a table's read found: the holds, and each GPU fd for the observers, who are told once
// the read is kept (a list's read may give way to the whole table's).
struct TableRead {
  FdScan scan;
  std::vector<std::pair<int, GpuDeviceFile>> gpu_fds;

  FdScan finish(int proc_dirfd, const Table& t, const std::vector<FdObserver*>& observers) {
    for (const auto& [fd, file] : gpu_fds)
      for (FdObserver* o : observers) o->observe({proc_dirfd, t.pid, t.thread, t.task, fd, file});
    for (auto& h : scan.holds) {
      std::sort(h.fds.begin(), h.fds.end());
      h.thread = t.thread;
    }
    std::sort(scan.holds.begin(), scan.holds.end(),
              [](const core::DeviceHold& a, const core::DeviceHold& b) { return a.path < b.path; });
    return std::move(scan);
  }
};

// One fd: a GPU device file joins `out`. False once the table turns out sealed (stop).
bool inspect_fd(int proc_dirfd, const std::string& table, int dfd, const char* name,
                const DeviceCatalog& catalog, TableRead& out) {
  // One statx per fd, as cheap as the readlinkat that once filtered by name (the cost is the
  // lookup of /proc/PID/fd/N, the same for both). AT_STATX_DONT_SYNC: the type and numbers
  // cached in the inode, so a file on a network or FUSE file system (whose server a user may
  // run, and stall) is never asked.
  struct statx sx {};
  if (::statx(dfd, name, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &sx) != 0) {
    if ((errno == EACCES || errno == EPERM) && link_refused(dfd, name)) {
      // The table could be listed (we have the privilege) but the kernel still refuses the
      // links: the process is protected from ptrace (e.g. a sandbox's init). Root cannot do
      // better, so it is reported, not counted as a permission gap.
      out.scan.sealed = true;
      return false;
    }
    return true;  // fd closed meanwhile
  }
  auto file = catalog.match(as_stat(sx));
  if (!file || opened_as_path(proc_dirfd, table, name)) return true;
  int fd = std::atoi(name);
  auto& holds = out.scan.holds;
  auto it = std::find_if(holds.begin(), holds.end(),
                         [&](const core::DeviceHold& h) { return h.path == file->path; });
  if (it == holds.end())
    holds.push_back({file->path, file->kind, file->number(), file->reaches_gpus(), {fd}, {}});
  else
    it->fds.push_back(fd);
  out.gpu_fds.emplace_back(fd, std::move(*file));
  return true;
}

// Reads the whole table `t`.
FdScan scan_table(int proc_dirfd, const Table& t, const DeviceCatalog& catalog,
                  const std::vector<FdObserver*>& observers) {
  TableRead out;
  const std::string table = t.folder();
  int dfd = -1;
  if (!open_table(proc_dirfd, table, out.scan, dfd)) return out.scan;
  DIR* dir = ::fdopendir(dfd);
  if (!dir) {
    out.scan.failed = errno;
    ::close(dfd);
    return out.scan;
  }
  const int err = for_each_entry(dir, [&](const char* name) {
    return inspect_fd(proc_dirfd, table, dfd, name, catalog, out);
  });
  // A process that exits while its table is read ends the listing with ENOENT.
  if (err != 0 && err != ENOENT && err != ESRCH) out.scan.failed = err;
  ::closedir(dir);
  // Read through a thread (the main thread had exited) that has begun to exit since, the listing
  // may have ended early with no error: what it found is not the table, which the process's
  // other threads still share. It is read again through one that runs (scan_device_fds).
  if (t.task != 0 && t.thread == 0 && !thread_runs(proc_dirfd, t.pid, t.task)) {
    FdScan gone;
    gone.vanished = true;
    return gone;
  }
  return out.finish(proc_dirfd, t, observers);
}

}  // namespace

FdScan scan_device_fds(int proc_dirfd, pid_t pid, const DeviceCatalog& catalog,
                       const std::vector<FdObserver*>& observers, pid_t thread) {
  FdScan scan = scan_table(proc_dirfd, {pid, thread, 0}, catalog, observers);
  // Where the main thread has exited, the table is read through the live thread its stat was
  // read through, which may have ended since while others run on: the process is not gone, and
  // its table (shared by its threads) is read through one that lives. None left: it is ending.
  for (int tries = 0; thread && scan.vanished && tries < kTableTaskTries; ++tries) {
    auto live = live_thread(proc_dirfd, pid);
    if (!live || live->tid == thread) break;
    thread = live->tid;
    scan = scan_table(proc_dirfd, {pid, thread, 0}, catalog, observers);
  }
  scan.task = thread;
  return scan;
}

FdScan scan_thread_table(int proc_dirfd, pid_t pid, pid_t tid, const DeviceCatalog& catalog,
                         const std::vector<FdObserver*>& observers) {
  return scan_table(proc_dirfd, {pid, tid, tid}, catalog, observers);
}

FdScan scan_listed_fds(int proc_dirfd, pid_t pid, const std::vector<int>& fds,
                       const DeviceCatalog& catalog, const std::vector<FdObserver*>& observers,
                       pid_t thread) {
  TableRead out;
  if (fds.empty()) return out.scan;
  const Table t{pid, thread, 0};
  const std::string table = t.folder();
  int dfd = -1;
  if (!open_table(proc_dirfd, table, out.scan, dfd)) return out.scan;
  for (int fd : fds)
    if (!inspect_fd(proc_dirfd, table, dfd, std::to_string(fd).c_str(), catalog, out)) break;
  ::close(dfd);
  // A listed fd closed or moved since (dup2 onto another number, as a process may do between
  // the pass and now): the whole table, as without the list.
  if (out.gpu_fds.size() < fds.size() && !out.scan.sealed)
    return scan_device_fds(proc_dirfd, pid, catalog, observers, thread);
  out.scan.task = thread;
  return out.finish(proc_dirfd, t, observers);
}

}  // namespace gpureap::procfs
