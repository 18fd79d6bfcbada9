#pragma once
// A thread may leave its process's fd table (unshare(CLONE_FILES)) and then open files of its
// own: /proc/PID/fd is the leader's table and lacks them, yet a GPU file open there keeps a
// context alive as any other. kcmp(KCMP_FILES) tells which threads have a table other than the
// one already read (it needs the same ptrace access as /proc/PID/fd); only those are read, and
// each table once however many threads share it. A process with one thread costs nothing.
#include <sys/types.h>

#include <cstddef>
#include <vector>

#include "procfs/device_files.h"
#include "procfs/fd_scan.h"

namespace gpureap::procfs {

struct ThreadTables {
  // One thread per fd table other than `table_task`'s, the lowest thread id of each.
  std::vector<pid_t> threads;
  // The errno where the threads could not be listed or compared (no kcmp: ENOSYS; refused:
  // EPERM; gpureap out of file descriptors: EMFILE); 0 when every thread was.
  int failed = 0;
  // The kcmp calls made: about one per thread, and log2 of the tables found for each thread
  // with a table of its own.
  size_t comparisons = 0;
};

// The threads of `pid` whose fd table is neither `table_task`'s (the table the scan read: the
// process's own, or a live thread's where the main thread has exited) nor another's found
// before. A thread that exits meanwhile is left out.
ThreadTables threads_with_own_tables(int proc_dirfd, pid_t pid, pid_t table_task);

// The GPU device files held in the tables of `threads` (threads_with_own_tables), each hold
// naming its thread (DeviceHold::thread). The observers see each GPU fd found, naming the
// thread too (scan_thread_table). `failed`, `sealed` and `readable` as the tables' reads found
// them; a thread that exited meanwhile holds nothing.
FdScan scan_thread_tables(int proc_dirfd, pid_t pid, const std::vector<pid_t>& threads,
                          const DeviceCatalog& catalog,
                          const std::vector<FdObserver*>& observers = {});

}  // namespace gpureap::procfs
