#include "supervise/terminal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

namespace gpureap::supervise {
namespace {

// SIGTTOU is also blocked for the whole run (signal_channel.cpp); ignoring it here as well
// keeps this correct on its own.
class IgnoreSigttou {
 public:
  IgnoreSigttou() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGTTOU, &ignore, &saved_);
  }
  ~IgnoreSigttou() { ::sigaction(SIGTTOU, &saved_, nullptr); }

 private:
  struct sigaction saved_ {};
};

}  // namespace

Terminal Terminal::detect() {
  Terminal t;
  int fd = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return t;  // no controlling terminal: a batch job, a container without -t
  if (::tcgetpgrp(fd) != ::getpgrp()) {
    ::close(fd);  // started in the background: the shell owns the foreground
    return t;
  }
  t.fd_ = fd;
  termios modes{};
  if (::tcgetattr(fd, &modes) == 0) t.saved_ = modes;
  return t;
}

Terminal::Terminal(Terminal&& o) noexcept : fd_(o.fd_), saved_(o.saved_) {
  o.fd_ = -1;
}

Terminal::~Terminal() {
  if (fd_ >= 0) ::close(fd_);
}

bool Terminal::gpureap_in_foreground() const {
  return fd_ >= 0 && ::tcgetpgrp(fd_) == ::getpgrp();
}

pid_t Terminal::foreground_group() const {
  return fd_ >= 0 ? ::tcgetpgrp(fd_) : -1;
}

void Terminal::give_to(pid_t pgid) const {
  if (fd_ < 0) return;
  IgnoreSigttou guard;
  ::tcsetpgrp(fd_, pgid);
}

void Terminal::take_back() const {
  give_to(::getpgrp());
}

void Terminal::restore_modes() const {
  if (fd_ < 0 || !saved_) return;
  IgnoreSigttou guard;
  ::tcsetattr(fd_, TCSADRAIN, &*saved_);
}

}  // namespace gpureap::supervise
