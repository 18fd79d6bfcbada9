#pragma once
// Small, allocation-light file reads relative to a directory fd, reporting errno so callers
// can tell "vanished" (ENOENT/ESRCH) from "not permitted" (EACCES/EPERM).
#include <string>

namespace gpureap::procfs {

struct FileRead {
  std::string data;
  int error = 0;           // errno; 0 on success (ENOTSUP: not a regular file)
  bool truncated = false;  // the file had more than the limit; data holds the limit

  bool ok() const { return error == 0; }
  bool vanished() const;
  bool denied() const;
};

// A /proc text gpureap reads is a few KiB; a command line is at most a few MiB.
inline constexpr size_t kDefaultReadLimit = 4u << 20;

// Reads the file `name` under `dirfd` (AT_FDCWD for absolute paths), at most `limit` bytes.
// Only regular files are read (procfs and sysfs files are): a FIFO or a device planted in a
// tree never blocks the read nor fills memory. The open never blocks either.
FileRead read_file_at(int dirfd, const std::string& name, size_t limit = kDefaultReadLimit);
FileRead read_file(const std::string& path, size_t limit = kDefaultReadLimit);

}  // namespace gpureap::procfs
