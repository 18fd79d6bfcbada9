// procfs::thread_group_of against the live /proc: a thread's id answers under /proc though it is
// not listed there, and only the kernel's Tgid says whose thread it is.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "procfs/parsers.h"
#include "procfs/thread_group.h"

namespace gpureap::procfs {
namespace thread_group_test {

TEST(ProcfsThreadGroupOf, AThreadIsItsProcesssAndAProcessIsNoThread) {
  int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(proc, 0);
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::atomic<pid_t> tid{0};
  std::thread t([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return done; });
  });
  while (tid == 0) std::this_thread::yield();
  EXPECT_NE(tid.load(), ::getpid());
  EXPECT_EQ(thread_group_of(proc, tid), ::getpid());
  EXPECT_EQ(thread_group_of(proc, ::getpid()), std::nullopt) << "a leader is its process";
  {
    std::lock_guard lock(m);
    done = true;
  }
  cv.notify_all();
  t.join();
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  EXPECT_EQ(thread_group_of(proc, gone), std::nullopt);
  EXPECT_EQ(thread_group_of(proc, 0), std::nullopt);
  ::close(proc);
}

TEST(ProcfsThreadGroupOf, StatusGivesTheTgid) {
  auto s = parse_status("Name:\tpython3\nTgid:\t1200\nNgid:\t0\nPid:\t1234\n");
  EXPECT_EQ(s.tgid, 1200);
  EXPECT_EQ(parse_status("Name:\tx\n").tgid, std::nullopt);
}

}  // namespace thread_group_test
}  // namespace gpureap::procfs
