#pragma once
// Which fds of which processes may hold a GPU device file, from one pass of the kernel's
// open-file iterator (kernel/open_file_iterator.h): the holder scan then reads through /proc
// only those fds, and the whole fd table only of processes the pass did not cover. A process
// the pass covered with no such fd holds none (as of the pass), and its table is not read.
#include <sys/types.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "kernel/open_file_iterator.h"
#include "procfs/device_files.h"

namespace gpureap::collect {

class KernelFdIndex {
 public:
  // Runs the iterator once. Each GPU file the catalogue names is first opened here with O_PATH
  // (which opens nothing): the pass must show this process holding exactly those, or its
  // records are not believed (an error). A stand-in file (not a device node) is then known by
  // the numbers the kernel gave it, not the ones stat reports (which a file system may
  // remap). `ticks_per_second`: /proc's unit of start times.
  static core::Result<KernelFdIndex> read(const kernel::OpenFileIterator& iterator,
                                          const procfs::DeviceCatalog& catalog,
                                          long ticks_per_second);

  // The fds of the process `pid` that started at `start_ticks` that are open on a GPU file (and
  // not with O_PATH), or null where the pass did not cover that process: a process it did not
  // see (no fd 0, device node or regular file open then, or started since) or whose start
  // differs (a reused PID).
  const std::vector<int>* gpu_fds(pid_t pid, uint64_t start_ticks) const;
  // A thread of that process with a table other than the leader's held a GPU file in the pass
  // (OpenFileRecord::tid): those tables are read through /proc (procfs/thread_tables.h); the
  // fds of gpu_fds are the leader's table's alone.
  bool thread_holds(pid_t pid, uint64_t start_ticks) const;

  size_t processes() const { return by_pid_.size(); }

 private:
  struct Entry {
    uint64_t start_ticks = 0;
    std::vector<int> fds;
    bool thread_holds = false;
    // A GPU file's record: the leader's table's fd, or a thread's table holds one.
    void hold(const kernel::OpenFileRecord& r);
  };
  std::unordered_map<pid_t, Entry> by_pid_;
};

}  // namespace gpureap::collect
