#include "reap/pidfd.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

// glibc 2.36 wraps these, but older headers only know the numbers; the numbers are the same
// on every architecture (they were added after the syscall tables were unified).
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

namespace gpureap::reap {

Pidfd Pidfd::open(pid_t pid) {
  if (pid <= 0) return Pidfd(pid, -1, Status::Gone);
  long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) return Pidfd(pid, static_cast<int>(fd), Status::Opened);
  if (errno == ESRCH) return Pidfd(pid, -1, Status::Gone);
  // EINVAL (ENOENT on newer kernels): the number is a task's but no process's, a thread other
  // than its leader. kill() by it would reach the thread's whole process, which nobody chose.
  if (errno == EINVAL || errno == ENOENT) return Pidfd(pid, -1, Status::Thread);
  // ENOSYS: an old kernel; EMFILE/ENFILE: too many targets for our fd limit. Either way the
  // caller falls back to kill() guarded by the start-time check.
  return Pidfd(pid, -1, Status::Fallback);
}

Pidfd::Pidfd(Pidfd&& other) noexcept
    : pid_(other.pid_), fd_(std::exchange(other.fd_, -1)), status_(other.status_) {}

Pidfd& Pidfd::operator=(Pidfd&& other) noexcept {
  if (this != &other) {
    close();
    pid_ = other.pid_;
    fd_ = std::exchange(other.fd_, -1);
    status_ = other.status_;
  }
  return *this;
}

Pidfd::~Pidfd() {
  close();
}

void Pidfd::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int Pidfd::send_signal(int signal) const {
  long rc = -1;
  switch (status_) {
    case Status::Opened:
      rc = ::syscall(SYS_pidfd_send_signal, fd_, signal, nullptr, 0);
      break;
    case Status::Fallback:
      rc = ::kill(pid_, signal);
      break;
    case Status::Gone:
      return ESRCH;
    case Status::Thread:
      return EINVAL;
  }
  return rc == 0 ? 0 : errno;
}

bool Pidfd::exited() const {
  if (status_ == Status::Gone) return true;
  if (status_ != Status::Opened) return false;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

}  // namespace gpureap::reap
