#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "reap/pidfd.h"

namespace gpureap::reap {
namespace {

TEST(ReapPidfd, TracksOneProcessUntilItExits) {
  pid_t kid = ::fork();
  if (kid == 0) {
    for (;;) ::pause();
  }
  Pidfd h = Pidfd::open(kid);
  ASSERT_EQ(h.status(), Pidfd::Status::Opened);
  EXPECT_GE(h.fd(), 0);
  EXPECT_FALSE(h.exited());
  EXPECT_EQ(h.send_signal(0), 0);
  EXPECT_EQ(h.send_signal(SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(kid, &status, 0), kid);
  EXPECT_TRUE(h.exited());
  EXPECT_EQ(h.send_signal(SIGTERM), ESRCH);  // bound to the dead process, not to the number
  Pidfd moved = std::move(h);
  EXPECT_EQ(h.fd(), -1);
  EXPECT_GE(moved.fd(), 0);
}

TEST(ReapPidfd, NoSuchProcessIsGone) {
  Pidfd h = Pidfd::open(4194304);  // above any pid_max
  EXPECT_EQ(h.status(), Pidfd::Status::Gone);
  EXPECT_TRUE(h.exited());
  EXPECT_EQ(h.send_signal(SIGTERM), ESRCH);
}

// The kernel opens no pidfd for a thread other than a leader, and kill() by the thread's id
// would signal its whole process: such a number is no process, never a fallback to kill().
TEST(ReapPidfd, AThreadsIdIsNoProcessAndIsNeverSignalledByNumber) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t kid = ::fork();
  if (kid == 0) {
    sigset_t all;
    sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, nullptr);  // a stray signal stays pending, to be seen
    std::thread parked([] {
      for (;;) ::pause();
    });
    pid_t tid = 0;
    // The parked thread's id: the one task of the process that is not its leader.
    while (tid == 0) {
      DIR* d = ::opendir("/proc/self/task");
      if (!d) ::_exit(1);
      while (dirent* e = ::readdir(d))
        if (std::atoi(e->d_name) > 0 && std::atoi(e->d_name) != ::getpid())
          tid = std::atoi(e->d_name);
      ::closedir(d);
    }
    if (::write(ready[1], &tid, sizeof tid) != sizeof tid) ::_exit(1);
    parked.join();
  }
  pid_t tid = 0;
  ASSERT_EQ(::read(ready[0], &tid, sizeof tid), static_cast<ssize_t>(sizeof tid));
  Pidfd h = Pidfd::open(tid);
  const auto status = h.status();
  const int sent = h.send_signal(SIGTERM);
  std::string pending;
  {
    std::ifstream f("/proc/" + std::to_string(kid) + "/status");
    for (std::string line; std::getline(f, line);)
      if (line.rfind("ShdPnd:", 0) == 0 || line.rfind("SigPnd:", 0) == 0) pending += line + "\n";
  }
  ::kill(kid, SIGKILL);
  ::waitpid(kid, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_EQ(status, Pidfd::Status::Thread);
  EXPECT_NE(sent, 0);
  EXPECT_FALSE(h.exited()) << "a thread's number says nothing of a process's exit";
  EXPECT_EQ(pending, "SigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n") << pending;
}

TEST(ReapPidfd, FallbackSignalsByPid) {
  pid_t kid = ::fork();
  if (kid == 0) {
    for (;;) ::pause();
  }
  Pidfd h = Pidfd::fallback(kid);
  EXPECT_EQ(h.status(), Pidfd::Status::Fallback);
  EXPECT_FALSE(h.exited());  // cannot be told from a PID: the executor checks /proc
  EXPECT_EQ(h.send_signal(SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(kid, &status, 0), kid);
  EXPECT_TRUE(WIFSIGNALED(status));
}

}  // namespace
}  // namespace gpureap::reap
