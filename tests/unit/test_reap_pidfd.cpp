#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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
