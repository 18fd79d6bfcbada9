#include "supervise/signal_channel.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpureap::supervise {

bool is_terminating(int signal) {
  return signal == SIGINT || signal == SIGTERM || signal == SIGHUP || signal == SIGQUIT;
}

ForwardTarget forward_target(int signal) {
  return is_terminating(signal) ? ForwardTarget::ProcessGroup : ForwardTarget::CommandOnly;
}

core::Result<SignalChannel> SignalChannel::open() {
  SignalChannel c;
  sigset_t handled;
  sigemptyset(&handled);
  for (int s : kForwardedSignals) sigaddset(&handled, s);
  // SIGCHLD: reap; SIGTSTP/SIGCONT: job control follows the job (see supervisor.h).
  for (int s : {SIGCHLD, SIGTSTP, SIGCONT}) sigaddset(&handled, s);
  sigset_t blocked = handled;
  // Blocked, never read: tcsetpgrp from a background group would otherwise stop gpureap.
  sigaddset(&blocked, SIGTTOU);
  if (::sigprocmask(SIG_BLOCK, &blocked, &c.original_mask_) != 0)
    return core::Error{std::string("cannot block signals: ") + std::strerror(errno), ""};
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  // A closed stderr must not kill the supervisor while the job still runs.
  ::sigaction(SIGPIPE, &ignore, &c.original_pipe_);
  c.fd_ = ::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
  if (c.fd_ < 0)
    return core::Error{std::string("cannot create a signalfd: ") + std::strerror(errno),
                       "gpureap run needs Linux signalfd (2.6.27 or later)"};
  return c;
}

SignalChannel::SignalChannel(SignalChannel&& o) noexcept
    : fd_(o.fd_), original_mask_(o.original_mask_), original_pipe_(o.original_pipe_) {
  o.fd_ = -1;
}

SignalChannel::~SignalChannel() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<signalfd_siginfo> SignalChannel::drain() {
  std::vector<signalfd_siginfo> out;
  signalfd_siginfo info[16];
  for (;;) {
    ssize_t n = ::read(fd_, info, sizeof info);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.insert(out.end(), info, info + static_cast<size_t>(n) / sizeof info[0]);
  }
  return out;
}

void SignalChannel::restore_in_child() const noexcept {
  ::sigaction(SIGPIPE, &original_pipe_, nullptr);
  ::sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
}

}  // namespace gpureap::supervise
