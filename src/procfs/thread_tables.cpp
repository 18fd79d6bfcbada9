#include "procfs/thread_tables.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "procfs/dir_entries.h"

namespace gpureap::procfs {
namespace {

// kcmp's order of two tasks' fd tables: the kernel orders the tables it compares (by their
// obfuscated addresses), so the tables found can be kept sorted and a thread's found by binary
// search: one process of thousands of threads, each with a table of its own, costs n log n
// comparisons, not n squared.
enum class TableOrder { Same, Before, After, Unordered, Failed };  // Failed: errno says why

TableOrder table_order(pid_t a, pid_t b) {
  switch (::syscall(SYS_kcmp, a, b, KCMP_FILES, 0, 0)) {
    case 0:
      return TableOrder::Same;
    case 1:
      return TableOrder::Before;
    case 2:
      return TableOrder::After;
    case -1:
      return TableOrder::Failed;
    default:
      return TableOrder::Unordered;  // 3: different, no order given (kcmp(2))
  }
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

// Where `tid`'s table is among `by_table` (sorted by kcmp's order of their tables): whether it
// is one of them, else where it goes. A kernel that gives no order makes `ordered` false, and
// this and every later lookup compare with each table in turn.
struct Lookup {
  bool known = false;
  size_t at = 0;
  bool failed = false;  // errno says why
};

Lookup find_table(pid_t tid, const std::vector<pid_t>& by_table, bool& ordered) {
  Lookup l{false, 0, false};
  size_t hi = by_table.size();
  while (ordered && l.at < hi) {
    const size_t mid = (l.at + hi) / 2;
    switch (table_order(tid, by_table[mid])) {
      case TableOrder::Same:
        l.known = true;
        return l;
      case TableOrder::Before:
        hi = mid;
        break;
      case TableOrder::After:
        l.at = mid + 1;
        break;
      case TableOrder::Unordered:
        ordered = false;
        break;
      case TableOrder::Failed:
        l.failed = true;
        return l;
    }
  }
  if (ordered) return l;
  for (pid_t other : by_table) {
    const TableOrder o = table_order(tid, other);
    l.known = o == TableOrder::Same;
    l.failed = o == TableOrder::Failed;
    if (l.known || l.failed) return l;
  }
  l.at = by_table.size();
  return l;
}

}  // namespace

ThreadTables threads_with_own_tables(int proc_dirfd, pid_t pid, pid_t table_task) {
  ThreadTables out;
  std::vector<pid_t> by_table;  // one thread per table found, in kcmp's order of the tables
  bool ordered = true;
  for (pid_t tid : thread_ids(proc_dirfd, pid, out.failed)) {
    if (tid == table_task) continue;
    // Most threads share the table read: one comparison each. A thread with a table of its
    // own is looked for among those found so far, so that threads sharing one (a leader that
    // unshared leaves its other threads on the first) have it read once.
    const TableOrder first = table_order(tid, table_task);
    if (first == TableOrder::Same) continue;
    const Lookup l =
        first == TableOrder::Failed ? Lookup{false, 0, true} : find_table(tid, by_table, ordered);
    if (l.failed) {
      if (errno == ESRCH) continue;  // the thread has exited
      out.failed = errno;
      break;
    }
    if (l.known) continue;
    by_table.insert(by_table.begin() + static_cast<long>(l.at), tid);
    out.threads.push_back(tid);
  }
  return out;
}

FdScan scan_thread_tables(int proc_dirfd, pid_t pid, const std::vector<pid_t>& threads,
                          const DeviceCatalog& catalog) {
  FdScan out;
  for (pid_t tid : threads) {
    // No observers: they read a process's fdinfo by its PID, which is the leader's table.
    auto scan = scan_device_fds(proc_dirfd, pid, catalog, {}, tid);
    if (scan.vanished) continue;
    if (!scan.readable) out.readable = false;
    if (scan.sealed) out.sealed = true;
    if (scan.failed) out.failed = scan.failed;
    for (auto& h : scan.holds) {
      h.thread = tid;
      out.holds.push_back(std::move(h));
    }
  }
  return out;
}

}  // namespace gpureap::procfs
