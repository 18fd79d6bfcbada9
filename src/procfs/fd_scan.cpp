#include "procfs/fd_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace gpureap::procfs {

FdScan scan_device_fds(int proc_dirfd, pid_t pid, const DeviceCatalog& catalog,
                       const std::vector<FdObserver*>& observers) {
  FdScan out;
  std::string fd_dir = std::to_string(pid) + "/fd";
  int dfd = ::openat(proc_dirfd, fd_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    if (errno == EACCES || errno == EPERM)
      out.readable = false;
    else
      out.vanished = true;
    return out;
  }
  DIR* dir = ::fdopendir(dfd);
  if (!dir) {
    ::close(dfd);
    out.vanished = true;
    return out;
  }
  char link[512];
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    ssize_t n = ::readlinkat(dfd, e->d_name, link, sizeof link - 1);
    if (n < 0 && (errno == EACCES || errno == EPERM)) {
      // The table could be listed (we have the privilege) but the kernel still refuses the
      // links: the process is protected from ptrace (e.g. a sandbox's init). Root cannot do
      // better, so it is reported, not counted as a permission gap.
      out.sealed = true;
      break;
    }
    if (n <= 0) continue;  // fd closed meanwhile
    if (!catalog.may_match(std::string_view(link, static_cast<size_t>(n)))) continue;
    struct stat st {};
    if (::fstatat(dfd, e->d_name, &st, 0) != 0) continue;
    auto file = catalog.match(st);
    if (!file) continue;
    int fd = std::atoi(e->d_name);
    auto it = std::find_if(out.holds.begin(), out.holds.end(),
                           [&](const core::DeviceHold& h) { return h.path == file->path; });
    if (it == out.holds.end())
      out.holds.push_back({file->path, file->kind, file->number(), file->reaches_gpus(), {fd}, {}});
    else
      it->fds.push_back(fd);
    for (FdObserver* o : observers) o->observe({proc_dirfd, pid, fd, *file});
  }
  ::closedir(dir);
  for (auto& h : out.holds) std::sort(h.fds.begin(), h.fds.end());
  std::sort(out.holds.begin(), out.holds.end(),
            [](const core::DeviceHold& a, const core::DeviceHold& b) { return a.path < b.path; });
  return out;
}

}  // namespace gpureap::procfs
