#pragma once
// Small, allocation-light file reads relative to a directory fd, reporting errno so callers
// can tell "vanished" (ENOENT/ESRCH) from "not permitted" (EACCES/EPERM).
#include <string>

namespace gpureap::procfs {

struct FileRead {
  std::string data;
  int error = 0;  // errno; 0 on success

  bool ok() const { return error == 0; }
  bool vanished() const;
  bool denied() const;
};

// Reads the whole file `name` under `dirfd` (use AT_FDCWD for absolute paths).
FileRead read_file_at(int dirfd, const std::string& name);
FileRead read_file(const std::string& path);

}  // namespace gpureap::procfs
