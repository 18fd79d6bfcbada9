// Which threads of a process have an fd table other than the one read (procfs/thread_tables):
// one thread per table, the lowest thread id of each, however many threads share it, and a
// process of many threads each with a table of its own. Real threads that unshare(CLONE_FILES).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "procfs/proc_fs.h"
#include "procfs/thread_tables.h"

namespace gpureap::procfs {
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
