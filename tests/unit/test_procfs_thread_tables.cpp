// threads_with_own_tables (src/procfs/thread_tables.cpp) on a real process whose threads leave
// its fd table (unshare(CLONE_FILES)), in pairs that share a table of their own. Any user can
// start such a process with thousands of threads: the threads must be told apart in about
// n log n kcmp calls, never n squared, or one process stalls every scan of the machine.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "procfs/proc_fs.h"
#include "procfs/thread_tables.h"

namespace gpureap::procfs {
namespace {

constexpr int kTables = 300;
int report_fd = -1;  // the child's end of the pipe its threads write their ids to

void send_tid() {
  pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
  if (::write(report_fd, &tid, sizeof tid) != sizeof tid) ::_exit(95);
}

void* share_and_wait(void*) {
  send_tid();
  for (;;) ::pause();
}

// Leaves the process's table, then starts a thread that shares the new one.
void* own_and_wait(void*) {
  if (::unshare(CLONE_FILES) != 0) ::_exit(97);
  send_tid();
  pthread_t t;
  if (::pthread_create(&t, nullptr, share_and_wait, nullptr) != 0) ::_exit(96);
  for (;;) ::pause();
}

TEST(ThreadTables, ManyOwnTablesAreToldApartInNLogNComparisons) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(p[0]);
    report_fd = p[1];
    for (int i = 0; i < kTables; ++i) {
      pthread_t t;
      if (::pthread_create(&t, nullptr, own_and_wait, nullptr) != 0) ::_exit(96);
    }
    for (;;) ::pause();
  }
  ::close(p[1]);
  std::vector<pid_t> tids(2 * kTables);
  size_t got = 0;
  while (got < tids.size() * sizeof(pid_t)) {
    ssize_t n =
        ::read(p[0], reinterpret_cast<char*>(tids.data()) + got, tids.size() * sizeof(pid_t) - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(p[0]);
  auto proc = ProcFs::open("/proc");
  ThreadTables t;
  if (proc && got == tids.size() * sizeof(pid_t))
    t = threads_with_own_tables(proc->dirfd(), child, child);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(proc);
  ASSERT_EQ(got, tids.size() * sizeof(pid_t)) << "the child's threads did not all start";
  ASSERT_EQ(t.failed, 0);
  // Each table once, named by the lowest of its two threads' ids (the order of the ids sent
  // is not the pairs', so the pairs are found by the tables themselves: every id is one of
  // the threads, and there are as many as tables).
  EXPECT_EQ(t.threads.size(), static_cast<size_t>(kTables));
  std::sort(tids.begin(), tids.end());
  for (pid_t tid : t.threads) EXPECT_TRUE(std::binary_search(tids.begin(), tids.end(), tid)) << tid;
  const double n = 2.0 * kTables;
  EXPECT_LE(static_cast<double>(t.comparisons), n * (2 + std::ceil(std::log2(kTables))))
      << "comparisons grow with the square of the threads";
}

}  // namespace
}  // namespace gpureap::procfs
