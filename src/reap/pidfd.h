#pragma once
// A process file descriptor (pidfd): a handle on one process that a recycled PID can never
// redirect. Signals go through pidfd_send_signal, and poll() on it reports the exit, for
// processes that are not our children too. Kernels without pidfds (before 5.3) get a
// fallback handle: kill() by PID, with the caller checking the start time first.
#include <sys/types.h>

namespace gpureap::reap {

class Pidfd {
 public:
  enum class Status {
    Opened,    // fd() is a pidfd
    Gone,      // no such process
    Thread,    // the number names a thread, not a process: never signalled (see open())
    Fallback,  // no pidfd (ENOSYS, or out of file descriptors): signal by PID
  };

  static Pidfd open(pid_t pid);
  // A fallback handle whatever the kernel supports (tests exercise the kill() path).
  static Pidfd fallback(pid_t pid) { return Pidfd(pid, -1, Status::Fallback); }

  Pidfd(Pidfd&& other) noexcept;
  Pidfd& operator=(Pidfd&& other) noexcept;
  Pidfd(const Pidfd&) = delete;
  Pidfd& operator=(const Pidfd&) = delete;
  ~Pidfd();

  pid_t pid() const { return pid_; }
  Status status() const { return status_; }
  int fd() const { return fd_; }

  // 0 when sent; otherwise errno: ESRCH (it has exited), EPERM (not permitted).
  int send_signal(int signal) const;
  // Opened: whether the process has exited (a zombie has). Without a pidfd this cannot be
  // told safely from the PID alone: the caller checks /proc.
  bool exited() const;

 private:
  Pidfd(pid_t pid, int fd, Status status) : pid_(pid), fd_(fd), status_(status) {}
  void close();

  pid_t pid_ = 0;
  int fd_ = -1;
  Status status_ = Status::Gone;
};

}  // namespace gpureap::reap
