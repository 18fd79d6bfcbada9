#include "procfs/file_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace gpureap::procfs {

bool FileRead::vanished() const { return error == ENOENT || error == ESRCH; }
bool FileRead::denied() const { return error == EACCES || error == EPERM; }

FileRead read_file_at(int dirfd, const std::string& name) {
  FileRead out;
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.data.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) out.error = errno;
    break;
  }
  ::close(fd);
  return out;
}

FileRead read_file(const std::string& path) { return read_file_at(AT_FDCWD, path); }

}  // namespace gpureap::procfs
