// The signal channel changes the process's signal mask, so each test runs it in a forked
// child and reports through the exit status.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervise/signal_channel.h"

namespace gpureap::supervise {
namespace {

int in_child(int (*body)()) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(SuperviseSignalChannel, ForwardingTargets) {
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    EXPECT_TRUE(is_terminating(s));
    EXPECT_EQ(forward_target(s), ForwardTarget::ProcessGroup);
  }
  for (int s : {SIGUSR1, SIGUSR2}) {
    EXPECT_FALSE(is_terminating(s));
    EXPECT_EQ(forward_target(s), ForwardTarget::CommandOnly);
  }
}

TEST(SuperviseSignalChannel, SignalsArriveThroughTheFd) {
  EXPECT_EQ(in_child([] {
              auto channel = SignalChannel::open();
              if (!channel) return 1;
              ::kill(::getpid(), SIGTERM);  // blocked: queued for the fd, not fatal
              ::kill(::getpid(), SIGUSR1);
              auto got = channel->drain();
              if (got.size() != 2) return 2;
              bool term = false, usr1 = false;
              for (auto& i : got) {
                term |= i.ssi_signo == SIGTERM;
                usr1 |= i.ssi_signo == SIGUSR1;
              }
              return term && usr1 ? 0 : 3;
            }),
            0);
}

TEST(SuperviseSignalChannel, ChildGetsTheOriginalMaskAndDispositions) {
  EXPECT_EQ(in_child([] {
              // What gpureap was started with: SIGUSR2 blocked, SIGHUP ignored.
              sigset_t start;
              sigemptyset(&start);
              sigaddset(&start, SIGUSR2);
              ::sigprocmask(SIG_SETMASK, &start, nullptr);
              ::signal(SIGHUP, SIG_IGN);
              auto channel = SignalChannel::open();
              if (!channel) return 1;
              channel->restore_in_child();
              sigset_t now;
              ::sigprocmask(SIG_SETMASK, nullptr, &now);
              if (!sigismember(&now, SIGUSR2)) return 2;
              for (int s : {SIGINT, SIGTERM, SIGCHLD, SIGTTOU, SIGTSTP, SIGCONT})
                if (sigismember(&now, s)) return 3;
              struct sigaction pipe {};
              ::sigaction(SIGPIPE, nullptr, &pipe);
              if (pipe.sa_handler != SIG_DFL) return 4;
              struct sigaction hup {};
              ::sigaction(SIGHUP, nullptr, &hup);
              return hup.sa_handler == SIG_IGN ? 0 : 5;
            }),
            0);
}

}  // namespace
}  // namespace gpureap::supervise
