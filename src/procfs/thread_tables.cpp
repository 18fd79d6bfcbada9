#include "procfs/thread_tables.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <string>

#include "procfs/dir_entries.h"

namespace gpureap::procfs {
namespace {

// How `a`'s fd table compares with `b`'s in the kernel's order of tables (kcmp orders them by
// their obfuscated addresses, consistently within a boot): 0 the same table, 1 before, 2 after;
// -1 with errno where kcmp failed. `calls` counts the comparisons.
int compare_tables(pid_t a, pid_t b, size_t& calls) {
  ++calls;
  long r = ::syscall(SYS_kcmp, a, b, KCMP_FILES, 0, 0);
  return r < 0 ? -1 : static_cast<int>(r);
}

// The thread ids under /proc/PID/task, sorted; `failed` set where the list could not be read
// (a process gone meanwhile lists nothing).
std::vector<pid_t> thread_ids(int proc_dirfd, pid_t pid, int& failed) {
  std::vector<pid_t> out;
  int dfd = ::openat(proc_dirfd, (std::to_string(pid) + "/task").c_str(),
                     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    if (errno != ENOENT && errno != ESRCH) failed = errno;
    return out;
  }
  DIR* dir = ::fdopendir(dfd);
  if (!dir) {
    failed = errno;
    ::close(dfd);
    return out;
  }
  const int err = for_each_entry(dir, [&](const char* name) {
    out.push_back(static_cast<pid_t>(std::atol(name)));
    return true;
  });
  if (err != 0 && err != ENOENT && err != ESRCH) failed = err;  // gone meanwhile: no threads
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

ThreadTables threads_with_own_tables(int proc_dirfd, pid_t pid, pid_t table_task) {
  ThreadTables out;
  // The tables found so far, one thread each, in the kernel's order: a thread's table is
  // looked up among them by binary search, so that a process whose many threads each have a
  // table of their own (any user can start one) costs n log n comparisons, not n squared.
  std::vector<pid_t> tables;
  for (pid_t tid : thread_ids(proc_dirfd, pid, out.failed)) {
    if (tid == table_task) continue;
    // Most threads share the table read: one comparison each.
    int first = compare_tables(table_task, tid, out.comparisons);
    if (first == 0) continue;
    if (first < 0) {
      if (errno == ESRCH) continue;  // the thread has exited
      out.failed = errno;
      break;
    }
    // A thread with a table of its own is looked up among the tables found so far, so that
    // threads sharing one (a leader that unshared leaves its other threads on the first) have
    // it read once.
    size_t lo = 0, hi = tables.size();
    bool known = false, gone = false;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      int r = compare_tables(tid, tables[mid], out.comparisons);
      if (r < 0 && errno == ESRCH) {
        // One of the two has exited: the thread (done with it) or the one that stood for its
        // table, which the table's next thread, if any, will stand for instead.
        gone = compare_tables(tid, tid, out.comparisons) != 0;
        if (gone) break;
        tables.erase(tables.begin() + static_cast<long>(mid));
        lo = 0;
        hi = tables.size();
        continue;
      }
      if (r < 0) {
        out.failed = errno;
        return out;
      }
      if (r == 0) {
        known = true;
        break;
      }
      if (r == 1)
        hi = mid;
      else
        lo = mid + 1;
    }
    if (known || gone) continue;
    tables.insert(tables.begin() + static_cast<long>(lo), tid);
    out.threads.push_back(tid);  // thread ids come in order: the lowest of its table
  }
  return out;
}

FdScan scan_thread_tables(int proc_dirfd, pid_t pid, const std::vector<pid_t>& threads,
                          const DeviceCatalog& catalog, const std::vector<FdObserver*>& observers) {
  FdScan out;
  for (pid_t tid : threads) {
    auto scan = scan_thread_table(proc_dirfd, pid, tid, catalog, observers);
    if (scan.vanished) continue;
    if (!scan.readable) out.readable = false;
    if (scan.sealed) out.sealed = true;
    if (scan.failed) out.failed = scan.failed;
    for (auto& h : scan.holds) out.holds.push_back(std::move(h));
  }
  return out;
}

}  // namespace gpureap::procfs
