#pragma once
// When the holder tracker reads the kernel's file events and wakes the engine. Pure: the time is
// passed in, so the rules are tested without a clock.
//
// News wakes the engine at once: a process's first file event in kHotWindow (a new holder, or
// one letting go), a holder's fork or exit, lost events. Up to kWakeBurst such wake-ups come back
// to back, then one per kMinWakeGap (a token bucket): many processes opening at once cost at most
// twenty collections a second, and a lone new holder after quiet is never held back. A process
// whose events come less than kHotWindow apart is storming (GPU device files are usually mode
// 0666: any user can open and close them in a loop): its events wait for the next wake-up, at
// most kHotWakeGap after the previous one, and take no token, so a storm costs a collection a
// second and leaves the tokens to new holders.
//
// File events are read at once, except after a read that carried a storming process's events:
// the next then waits kFileReadGap, while the kernel merges the storm's queued events (a record
// per gap instead of one per open), so a storm is read a gap apart and a new holder's event
// during it waits at most that long.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <unordered_map>
#include <vector>

namespace gpureap::daemon {

class WakePacer {
 public:
  using Clock = std::chrono::steady_clock;

  static constexpr std::chrono::milliseconds kHotWindow{1000};
  static constexpr std::chrono::milliseconds kHotWakeGap{1000};
  static constexpr std::chrono::milliseconds kMinWakeGap{50};
  static constexpr size_t kWakeBurst = 4;
  static constexpr std::chrono::milliseconds kFileReadGap{10};

  // File events were read at `now`: the process of each event, in order. `lost`: the kernel's
  // queue overflowed (news: a full scan must follow).
  void files_read(const std::vector<pid_t>& pids, bool lost, Clock::time_point now);
  // News from elsewhere (a holder forked or exited, process events were lost): wake at once.
  void news();
  // The engine was woken at `now` (at wake_due() or later).
  void woke(Clock::time_point now);

  // When the engine is to be woken; empty: nothing asks for it.
  std::optional<Clock::time_point> wake_due() const;
  // The file events are not read before this.
  Clock::time_point next_file_read() const { return next_file_read_; }

 private:
  // The token bucket as a theoretical arrival time (GCRA): a wake-up for news is allowed from
  // next_token_ - (kWakeBurst - 1) * kMinWakeGap, and each one moves next_token_ a gap on.
  Clock::time_point token_from() const;

  bool news_ = false;                         // news waits for a wake-up
  std::optional<Clock::time_point> hot_due_;  // a storm's events wait until then
  Clock::time_point last_wake_{};
  Clock::time_point next_token_{};
  Clock::time_point next_file_read_{};
  // Each process's latest file event, while it is less than kHotWindow old.
  std::unordered_map<pid_t, Clock::time_point> last_event_;
};

}  // namespace gpureap::daemon
