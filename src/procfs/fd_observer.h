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

// One GPU device fd the scan found.
struct GpuFd {
  int proc_dirfd;  // the proc root, O_DIRECTORY: read "<pid>/fdinfo/<fd>" relative to it
  pid_t pid;
  int fd;
  const GpuDeviceFile& file;
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
