#pragma once
// The processes whose leader's exit the kernel reported while another of their threads ran
// (a leader's pthread_exit(), an exec from another thread, a group exit whose other threads
// are still ending): their threads' exits are checked against /proc, the last one being the
// process's end. The kernel reports a thread's exit before it releases the thread, so /proc read
// at once may still count the last one: each is also checked again at growing delays after its
// latest event, and not after the last delay until another event.
//
// An overflow of the events' queue may have lost the last thread's exit. What was known is
// kept, not dropped, so the end is still seen without waiting for the next full scan: each is
// checked at once, and an end then found carries no wait status, since the exit that gave it was
// lost. A process whose start time is not known is dropped instead: its PID may already be
// another process's, which /proc could not tell apart. (Whether such an end is recorded is the
// holder book's: only where /proc still shows that start under the PID, daemon/holder_book.h.)
#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace gpureap::daemon {

class UnconfirmedEnds {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::array<std::chrono::milliseconds, 5> kRecheckDelays{
      std::chrono::milliseconds(5), std::chrono::milliseconds(20), std::chrono::milliseconds(100),
      std::chrono::milliseconds(500), std::chrono::milliseconds(2000)};

  struct End {
    // As waitpid(2) would report it, from its latest exit reported; empty where events were
    // lost since (the exit that ended it may be among them).
    std::optional<int> wait_status;
    std::optional<uint64_t> start_ticks;  // its start time, where a scan or a fork told it
    Clock::time_point due;                // of the next check; max(): none until an event
    size_t checks = 0;                    // since its latest event
  };

  // A thread of `pid` exited with `wait_status` at `now`, and another runs: checked again at the
  // first delay. `start_ticks`: its start time where known now (else the one kept is).
  void reported(pid_t pid, std::optional<int> wait_status, std::optional<uint64_t> start_ticks,
                Clock::time_point now);
  // A scan read `pid` with its main thread exited, which no event reported (before the daemon
  // began): its threads' exits are followed from its next one, with no status known till then.
  // One followed already is left as it is.
  void watch(pid_t pid, uint64_t start_ticks);
  // `pid` ended, or its leader runs again: no longer followed.
  void forget(pid_t pid) { ends_.erase(pid); }
  bool contains(pid_t pid) const { return ends_.count(pid) > 0; }
  const End* find(pid_t pid) const;
  std::vector<pid_t> pids() const;  // every process followed

  // Events were lost: see above.
  void events_lost(Clock::time_point now);

  // The processes whose check is due by `now`, with what is kept of each.
  std::vector<std::pair<pid_t, End>> due(Clock::time_point now) const;
  // `pid`, checked at `now`, still runs: its next check comes at the next delay, or none.
  void still_running(pid_t pid, size_t checks_before, Clock::time_point now);
  // When the next check is due; empty: none until an event.
  std::optional<Clock::time_point> next() const;

 private:
  std::map<pid_t, End> ends_;
};

}  // namespace gpureap::daemon
