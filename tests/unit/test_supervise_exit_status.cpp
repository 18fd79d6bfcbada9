#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervise/exit_status.h"

namespace gpureap::supervise {
namespace {

// Real wait statuses, from real children.
int status_of_child(void (*body)()) {
  pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(SuperviseExitStatus, ExitStatusIsPassedThrough) {
  int st = status_of_child([] { ::_exit(42); });
  auto e = exit_from_wait_status(st, false);
  EXPECT_EQ(e.cause, EndCause::Exited);
  EXPECT_EQ(e.code, 42);
  EXPECT_EQ(e.status, 42);
  EXPECT_FALSE(e.signal);
}

TEST(SuperviseExitStatus, DeathBySignalIs128PlusN) {
  int st = status_of_child([] {
    ::signal(SIGTERM, SIG_DFL);
    ::raise(SIGTERM);
  });
  auto e = exit_from_wait_status(st, false);
  EXPECT_EQ(e.cause, EndCause::Signaled);
  EXPECT_EQ(e.code, 128 + SIGTERM);
  EXPECT_EQ(e.signal, SIGTERM);
}

TEST(SuperviseExitStatus, TimeoutIs124WhateverTheJobDid) {
  for (auto body : {+[] { ::_exit(0); }, +[] { ::raise(SIGKILL); }}) {
    auto e = exit_from_wait_status(status_of_child(body), true);
    EXPECT_EQ(e.cause, EndCause::TimedOut);
    EXPECT_EQ(e.code, kExitTimedOut);
  }
  EXPECT_EQ(exit_from_wait_status(status_of_child([] { ::_exit(3); }), true).status, 3)
      << "the job's own status stays in the report";
}

TEST(SuperviseExitStatus, StartFailures) {
  EXPECT_EQ(start_failure(EndCause::NotFound, {"x", ""}).code, 127);
  EXPECT_EQ(start_failure(EndCause::NotExecutable, {"x", ""}).code, 126);
  EXPECT_EQ(start_failure(EndCause::StartFailed, {"x", ""}).code, 125);
  EXPECT_STREQ(to_string(EndCause::NotFound), "not-found");
  EXPECT_STREQ(to_string(EndCause::TimedOut), "timeout");
}

}  // namespace
}  // namespace gpureap::supervise
