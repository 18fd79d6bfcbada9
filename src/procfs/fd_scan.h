#pragma once
// The hot path: which GPU device files one process holds open. One directory read per
// process, one readlinkat per fd, filter by the link text, stat only the candidates.
#include <sys/types.h>

#include <vector>

#include "core/process.h"
#include "procfs/device_files.h"
#include "procfs/fd_observer.h"

namespace gpureap::procfs {

struct FdScan {
  std::vector<core::DeviceHold> holds;
  bool readable = true;  // false: no permission to read the fd table
  bool sealed = false;   // the table is listable but the kernel refuses its links
  bool vanished = false;
};

// proc_dirfd: an O_DIRECTORY fd of the proc root. Each observer sees every GPU device fd found
// (see fd_observer.h), so a backend reads what it needs while the fd is at hand.
FdScan scan_device_fds(int proc_dirfd, pid_t pid, const DeviceCatalog& catalog,
                       const std::vector<FdObserver*>& observers = {});

}  // namespace gpureap::procfs
