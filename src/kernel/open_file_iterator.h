#pragma once
// Every open file of every process, read in one pass inside the kernel: a BPF iterator over
// the tasks' file tables (bpf_iter_task_file, Linux 5.8). Where /proc costs a lookup of
// /proc/PID/fd/N per fd (about 3 µs), the iterator costs a tenth of that, so the holder scan
// reads the fd tables of only the processes it names.
//
// What a record says comes from the kernel's own structures (the file's inode, its flags, the
// process's thread group), never from a name. It needs the privilege to load a tracing
// program (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN) and a kernel with BTF; where either is
// missing, load() says why and the scan reads /proc as before.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "core/result.h"

namespace gpureap::kernel {

struct OpenFileRecord {
  pid_t tgid = 0;  // the process (thread group) in the initial PID namespace
  // The task whose table holds the fd: tgid for the process's table (walked once, through the
  // leader); another thread's id for a table other than the leader's: one of its own
  // (unshare(CLONE_FILES)), or, where the leader has exited, the table its threads still
  // share (a record per thread then).
  pid_t tid = 0;
  int fd = 0;
  uint32_t flags = 0;  // the open flags (O_PATH among them)
  uint32_t mode = 0;   // the inode's type and permission bits
  dev_t rdev = 0;      // a device node's number (makedev form)
  dev_t sb_dev = 0;    // the file system's device in the kernel (makedev form)
  uint64_t ino = 0;
  // When the process's thread group leader started, in ns since boot (what /proc/PID/stat's
  // start time is counted from, in clock ticks).
  uint64_t start_ns = 0;
};

class OpenFileIterator {
 public:
  // This process has the capabilities to load the program (CAP_SYS_ADMIN, or CAP_BPF and
  // CAP_PERFMON): asked first, so that a user without them costs no read of the kernel's types.
  static bool permitted();
  // Builds the program for the running kernel's struct layouts (kernel/btf.h) and loads it.
  static core::Result<OpenFileIterator> load();
  // One pass over every process's open device nodes and regular files (no other kind of file
  // can be a GPU file), and its fd 0 whatever it is. Threads that share their process's table
  // are skipped; a thread with a table of its own reads under its process's tgid, with its tid.
  // `each` sees the records as they are read: at most one buffer of them is in memory at
  // once, however many fds the machine's processes open.
  core::Result<bool> for_each(const std::function<void(const OpenFileRecord&)>& each) const;

 private:
  explicit OpenFileIterator(std::shared_ptr<const int> link) : link_(std::move(link)) {}
  std::shared_ptr<const int>
      link_;  // the program's iterator link; its fd closes with the last copy
};

}  // namespace gpureap::kernel
