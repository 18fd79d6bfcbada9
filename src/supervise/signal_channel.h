#pragma once
// The signals gpureap run handles arrive through a signalfd, read by the main loop: no work
// happens in a signal handler. Blocking them (rather than installing handlers) is also what
// lets gpureap receive them as PID 1, where the kernel drops default-action signals.
#include <signal.h>
#include <sys/signalfd.h>

#include <optional>
#include <vector>

#include "core/result.h"

namespace gpureap::supervise {

// Forwarded to the job; the first four also start its teardown.
inline constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
bool is_terminating(int signal);  // SIGINT, SIGTERM, SIGHUP, SIGQUIT

// Where a forwarded signal goes. Terminating ones go to the job's whole process group, as a
// terminal would deliver them; SIGUSR1/SIGUSR2 only to CMD, because they are requests to the
// job (checkpoint, reload) and their default action would kill helpers that ignore them.
enum class ForwardTarget { ProcessGroup, CommandOnly };
ForwardTarget forward_target(int signal);

class SignalChannel {
 public:
  // Blocks the handled signals (and SIGTTOU, for tcsetpgrp), ignores SIGPIPE, and opens the
  // signalfd; remembers the mask and dispositions gpureap started with.
  static core::Result<SignalChannel> open();
  SignalChannel(SignalChannel&& other) noexcept;
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;
  ~SignalChannel();

  int fd() const { return fd_; }
  // Every signal pending now (the fd is non-blocking).
  std::vector<signalfd_siginfo> drain();

  // In the forked child, before execve: the job gets the signal mask and dispositions
  // gpureap itself was started with, not gpureap's. Async-signal-safe.
  void restore_in_child() const noexcept;

 private:
  SignalChannel() = default;
  int fd_ = -1;
  sigset_t original_mask_{};
  struct sigaction original_pipe_ {};
};

}  // namespace gpureap::supervise
