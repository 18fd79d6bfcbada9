// threads_with_own_tables (src/procfs/thread_tables.cpp) on real processes whose threads leave
// its fd table (unshare(CLONE_FILES)): one thread per table, the lowest id of each, however many
// threads share it; and any user can start such a process with thousands of threads, so they
// must be told apart in about n log n kcmp calls, never n squared, or one process stalls every
// scan of the machine.
#include <fcntl.h>
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

namespace thread_tables_test {
namespace {

int g_report = -1;  // the child's pipe to the test: "tid kind" records

struct Said {
  pid_t tid;
  char kind;  // 'o': a table of its own; 's': shares the table of the thread that started it
};

void say(char kind) {
  Said s{static_cast<pid_t>(::syscall(SYS_gettid)), kind};
  if (::write(g_report, &s, sizeof s) != sizeof s) ::_exit(95);
}

void* sleep_forever(void*) {
  for (;;) ::pause();
}

void* shares(void*) {
  say('s');
  return sleep_forever(nullptr);
}

// A thread with a table of its own; with `arg`, it starts a thread that shares it.
void* own_table(void* arg) {
  if (::unshare(CLONE_FILES) != 0) ::_exit(97);
  say('o');
  if (arg != nullptr) {
    pthread_t t;
    if (::pthread_create(&t, nullptr, shares, nullptr) != 0) ::_exit(96);
  }
  return sleep_forever(nullptr);
}

constexpr int kOwn = 200;  // threads with tables of their own, one of which starts a sharer
constexpr int kOnLeaders = 3;

TEST(ThreadTables, OneThreadPerTableOfItsOwnAmongManyThreads) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(p[0]);
    g_report = p[1];
    pthread_t t;
    for (int i = 0; i < kOnLeaders; ++i)
      if (::pthread_create(&t, nullptr, shares, nullptr) != 0) ::_exit(96);
    for (int i = 0; i < kOwn; ++i)
      if (::pthread_create(&t, nullptr, own_table, i == kOwn / 2 ? &t : nullptr) != 0) ::_exit(96);
    sleep_forever(nullptr);
  }
  ::close(p[1]);
  std::vector<pid_t> own, sharers;
  for (int i = 0; i < kOnLeaders + kOwn + 1; ++i) {
    Said s{};
    ASSERT_EQ(::read(p[0], &s, sizeof s), static_cast<ssize_t>(sizeof s)) << "record " << i;
    (s.kind == 'o' ? own : sharers).push_back(s.tid);
  }
  ::close(p[0]);
  std::sort(own.begin(), own.end());

  auto proc = ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  const auto found = threads_with_own_tables(proc->dirfd(), child, child);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);

  EXPECT_EQ(found.failed, 0);
  auto threads = found.threads;
  std::sort(threads.begin(), threads.end());
  // Exactly the threads that unshared: the one that started a sharer is its table's lowest id
  // (it made the sharer), and neither the leader's threads nor the sharer appear.
  EXPECT_EQ(threads, own);
  for (pid_t s : sharers)
    EXPECT_EQ(std::count(threads.begin(), threads.end(), s), 0) << "thread " << s;
}

TEST(ThreadTables, AProcessOfOneThreadHasNoOtherTable) {
  auto proc = ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) sleep_forever(nullptr);
  const auto found = threads_with_own_tables(proc->dirfd(), child, child);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(found.threads.empty());
  EXPECT_EQ(found.failed, 0);
}

}  // namespace
}  // namespace thread_tables_test
}  // namespace gpureap::procfs
