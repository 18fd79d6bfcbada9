#pragma once
// A hook into the holder scan: a backend whose driver tells per open file what it holds (DRM
// fdinfo) learns it from the fds the scan finds, instead of walking /proc a second time.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "procfs/device_files.h"

namespace gpureap::core {
struct HostProcess;
}

namespace gpureap::procfs {

// The entry an fd table is read through, relative to the proc root: "<pid>" for the process's
// own (`task` 0), else "<pid>/task/<task>".
inline std::string table_entry(pid_t pid, pid_t task) {
  return std::to_string(pid) + (task ? "/task/" + std::to_string(task) : std::string());
}

// Where the fdinfo of `fd` is, relative to the proc root: "<pid>/fdinfo/<fd>" where the table
// is read through the process's own entry (`task` 0), else "<pid>/task/<task>/fdinfo/<fd>".
inline std::string fdinfo_path(pid_t pid, pid_t task, int fd) {
  return table_entry(pid, task) + "/fdinfo/" + std::to_string(fd);
}

// One GPU device fd the scan found.
struct GpuFd {
  int proc_dirfd;  // the proc root, O_DIRECTORY: read fdinfo_path() relative to it
  pid_t pid;       // the process, whose row the fd's holds are
  // The thread whose fd table of its own holds the fd (it called unshare(CLONE_FILES): its fd
  // numbers are not the process's), as DeviceHold::thread names it; 0: the process's table.
  pid_t thread;
  // The task through whose entry the table is read: `thread`; for the process's table 0
  // (/proc/PID), or a live thread where the main thread has exited, whose /proc/PID/fdinfo is
  // empty (StatRead::fd_task).
  pid_t task;
  int fd;
  const GpuDeviceFile& file;

  std::string fdinfo_path() const { return procfs::fdinfo_path(pid, task, fd); }
};

class FdObserver {
 public:
  virtual ~FdObserver() = default;
  // Before a scan begins and after it ends, on the collector's thread.
  virtual void scan_started() {}
  virtual void scan_finished() {}
  // From the scan's worker threads, concurrently: an observer guards its own state. Called
  // once the process's table was read, for each GPU fd found; the process may close or reuse
  // it meanwhile, so what an observer reads about it is checked (fdinfo names its driver).
  virtual void observe(const GpuFd& fd) = 0;
  // After scan_finished, once the holds are split by open file description (kcmp): each GPU
  // file hold of `processes` carries its open_file id, or none where `unknown` says why.
  virtual void open_files_grouped(const std::vector<core::HostProcess>& /*processes*/,
                                  const std::optional<std::string>& /*unknown*/) {}
};

}  // namespace gpureap::procfs
