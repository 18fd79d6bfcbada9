#pragma once
// When a collection reads what. The driver is read every time; /proc every
// `holder_scan_interval`, and at once when the driver's view moves (a new or vanished PID is
// explained within one collection); every `full_scan_interval` that scan reads every process's
// fd table, where the others read only new processes' and known holders' (reading fd links is
// nearly all of a scan's cost). Pure: time is passed in.
#include <chrono>
#include <optional>

#include "engine/driver_view.h"

namespace gpureap::engine {

using Clock = std::chrono::steady_clock;

struct Cadence {
  // A collection every interval; 0: only when one is asked for (Engine::fresh, wake).
  std::chrono::milliseconds interval{std::chrono::seconds(1)};
  // 0: every collection scans /proc, and every scan is full (the command-line views).
  std::chrono::milliseconds holder_scan_interval{0};
  std::chrono::milliseconds full_scan_interval{0};
  // Empty: the driver's own deadline (a command-line view's --driver-timeout).
  std::optional<std::chrono::milliseconds> driver_timeout;
  // Look for IPC residue (doctor's ipc-residue) on full scans, at most every kIpcResidueEvery.
  bool ipc_residue = false;
};

// Host-memory residue changes slowly, and when /dev/shm has old files finding it reads every
// process's fds and memory maps.
inline constexpr std::chrono::minutes kIpcResidueEvery{5};

class ScanSchedule {
 public:
  struct Due {
    bool scan = false;         // read /proc again
    bool full = false;         // ... every process's fd table
    bool ipc_residue = false;  // and look for IPC residue
  };

  // What the collection at `now` reads, given what the driver just said.
  Due due(Clock::time_point now, const DriverView& driver, const Cadence& cadence) const;
  // The collection at `now` did what `due` said.
  void done(Clock::time_point now, const Due& due, const DriverView& driver,
            const Cadence& cadence);

 private:
  bool scanned_ = false;
  DriverView view_at_scan_;
  Clock::time_point next_scan_{}, next_full_scan_{}, next_ipc_check_{};
};

// When the collection after one that began at `began` and ended at `ended` is due: one
// interval after the start, but never back to back (half an interval of rest at least), so a
// collection slower than its interval does not make the engine spin.
Clock::time_point next_collection(Clock::time_point began, Clock::time_point ended,
                                  std::chrono::milliseconds interval);

}  // namespace gpureap::engine
