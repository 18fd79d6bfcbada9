#include "procfs/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace gpureap::procfs {

bool FileRead::vanished() const {
  return error == ENOENT || error == ESRCH;
}
bool FileRead::denied() const {
  return error == EACCES || error == EPERM;
}

FileRead read_file_at(int dirfd, const std::string& name, size_t limit) {
  FileRead out;
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    out.error = ENOTSUP;
    ::close(fd);
    return out;
  }
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, std::min(sizeof buf, limit + 1 - out.data.size()));
    if (n > 0) {
      out.data.append(buf, static_cast<size_t>(n));
      if (out.data.size() > limit) {
        out.data.resize(limit);
        out.truncated = true;
        break;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) out.error = errno;
    break;
  }
  ::close(fd);
  return out;
}

FileRead read_file(const std::string& path, size_t limit) {
  return read_file_at(AT_FDCWD, path, limit);
}

}  // namespace gpureap::procfs
