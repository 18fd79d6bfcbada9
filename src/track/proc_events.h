#pragma once
// Fork and exit of every process, from the kernel's netlink proc connector
// (PROC_EVENT_FORK / PROC_EVENT_EXIT; needs CAP_NET_ADMIN on kernels before 6.6; later
// ones let any process of the initial namespaces listen). An fd inherited through fork is no
// open, so fanotify alone misses a holder's children: a fork of a known holder makes its child
// one to scan.
#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "core/result.h"

namespace gpureap::track {

struct ProcEvent {
  // Exit: the thread-group leader's (pid == tgid). That is the process's end only when no
  // other thread of it lives on: a non-leader thread's exec() reports the old leader's exit
  // while the process runs on under its PID and start time, and a leader that pthread_exit()s
  // reports it while its other threads run; the process then ends with the exit of its last
  // thread, a ThreadExit. A consumer confirms with /proc either way.
  enum class Kind { Fork, Exit, ThreadExit };
  Kind kind = Kind::Fork;
  pid_t pid = 0;  // the new process (fork), or the process (thread group) a thread of which
                  // ended (exits)
  // Fork: its parent as the kernel records it (real_parent): the process it was forked from,
  // or that one's parent for a clone(CLONE_PARENT). Exits carry a parent too, not kept here: the
  // kernel reads it after it has reparented the exiting process's own children (exit_notify()
  // comes before the report in do_exit()), so a child's exit can name its new parent (a
  // subreaper, an init) before its old parent's exit is reported; it tells no consumer whose exit
  // it is.
  pid_t parent = 0;
  pid_t thread = 0;  // exits: the thread that ended (pid itself for Exit)
  // Exits: the thread's exit code as waitpid(2) reports a process's (the signal that ended it,
  // or exit()'s status << 8); a group exit gives every thread the group's.
  int wait_status = 0;
  // When the kernel reported it: its CLOCK_MONOTONIC in nanoseconds (the connector stamps every
  // event with ktime_get_ns(); its header calls that "since boot", but the clock stops while the
  // machine is suspended). See Batch::boot_ticks().
  uint64_t at_ns = 0;
};

class ProcEvents {
 public:
  // Subscribes to the connector. Fails, saying why and what to do, without CAP_NET_ADMIN (on
  // kernels that ask for it), on a kernel without CONFIG_PROC_EVENTS, or in a container (the
  // kernel ignores a subscriber outside the initial pid and user namespaces).
  static core::Result<ProcEvents> open();
  ProcEvents(ProcEvents&& other) noexcept;
  ProcEvents& operator=(ProcEvents&& other) noexcept;
  ProcEvents(const ProcEvents&) = delete;
  ~ProcEvents();

  int fd() const { return fd_; }

  struct Batch {
    std::vector<ProcEvent> events;  // thread forks are left out: processes only
    bool overflow = false;          // the socket's buffer overran (ENOBUFS): events were lost
    // CLOCK_BOOTTIME less CLOCK_MONOTONIC (boot_offset_now()) read as the batch was read, before
    // its events were: the time the machine has spent suspended since boot.
    uint64_t boot_offset_ns = 0;
    // When the kernel reported `e`, in clock ticks since boot: /proc/PID/stat's start time's
    // clock (CLOCK_BOOTTIME) and unit (sysconf(_SC_CLK_TCK)), rounded down as the kernel rounds
    // a start time. The two clocks differ by the time spent suspended, which only grows, so
    // the offset read with the batch is the one of its events unless the machine slept between
    // an event and the read (then the event reads as later than it was, by that sleep).
    uint64_t boot_ticks(const ProcEvent& e) const;
  };
  // Every event queued now; never blocks.
  Batch read();
  // CLOCK_BOOTTIME less CLOCK_MONOTONIC now, in nanoseconds, rounded down (the two clocks are
  // read one after the other: the least it can be).
  static uint64_t boot_offset_now();

 private:
  ProcEvents(int fd, Batch pending);
  void close();  // unsubscribes and closes the socket
  int fd_ = -1;
  Batch pending_;  // what came with the subscription's acknowledgement, for the first read()
};

}  // namespace gpureap::track
