#pragma once
// The hot path: which GPU device files one process holds open. One directory read per process
// and one statx per fd: a file is a GPU device file by its number (a node's st_rdev; a
// stand-in's device and inode), which the kernel vouches for, never by the name its link shows
// (a bind mount in the holder's own mount namespace names it whatever its user chose).
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
  // The errno where the table could not be read for another reason than these (gpureap out of
  // file descriptors or memory: procfs/resource_shortage.h); 0 when it was read.
  int failed = 0;
  // The live thread through which the process's table was read (scan_device_fds' `thread`, or
  // another where that one had ended); 0: through /proc/PID.
  pid_t task = 0;
};

// proc_dirfd: an O_DIRECTORY fd of the proc root. Each observer sees every GPU device fd found
// (see fd_observer.h), so a backend reads what it needs while the fd is at hand. `thread`: a
// live thread through which the process's table is read (/proc/PID/task/TID/fd) where its main
// thread has exited (StatRead's fd_task); 0: through /proc/PID/fd. Where that thread has ended
// since while another lives, the table is read through that one (FdScan::task says which). An fd
// opened with O_PATH opens no device (no driver open, no context to keep) and holds nothing.
FdScan scan_device_fds(int proc_dirfd, pid_t pid, const DeviceCatalog& catalog,
                       const std::vector<FdObserver*>& observers = {}, pid_t thread = 0);

// The same for the fd table of its own that the thread `tid` of `pid` has
// (procfs/thread_tables.h): each hold names the thread (DeviceHold::thread), and so does each
// GpuFd the observers see, since its fd numbers are not the process's.
FdScan scan_thread_table(int proc_dirfd, pid_t pid, pid_t tid, const DeviceCatalog& catalog,
                         const std::vector<FdObserver*>& observers = {});

// The same, reading only the fds `fds` of the table (those the kernel's open-file iterator
// found on a GPU device file): each is looked up and matched as in a full scan, so what it
// holds rests on the same evidence. Where one of them no longer holds a GPU file (closed, or
// moved to another number since), the whole table is read instead. No fds: nothing is read and
// nothing is held.
FdScan scan_listed_fds(int proc_dirfd, pid_t pid, const std::vector<int>& fds,
                       const DeviceCatalog& catalog, const std::vector<FdObserver*>& observers = {},
                       pid_t thread = 0);

}  // namespace gpureap::procfs
