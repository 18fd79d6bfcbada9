#include "engine/scan_schedule.h"

#include <algorithm>

namespace gpureap::engine {

ScanSchedule::Due ScanSchedule::due(Clock::time_point now, const DriverView& driver,
                                    const Cadence& cadence) const {
  Due d;
  d.full = !scanned_ || now >= next_full_scan_;
  d.scan = d.full || now >= next_scan_ || driver_view_moved(view_at_scan_, driver);
  d.ipc_residue = cadence.ipc_residue && d.full && now >= next_ipc_check_;
  return d;
}

void ScanSchedule::done(Clock::time_point now, const Due& due, const DriverView& driver,
                        const Cadence& cadence) {
  if (!due.scan) return;
  scanned_ = true;
  view_at_scan_ = driver;
  next_scan_ = now + cadence.holder_scan_interval;
  if (due.full) next_full_scan_ = now + cadence.full_scan_interval;
  if (due.ipc_residue) next_ipc_check_ = now + kIpcResidueEvery;
}

Clock::time_point next_collection(Clock::time_point began, Clock::time_point ended,
                                  std::chrono::milliseconds interval) {
  return std::max(began + interval, ended + interval / 2);
}

}  // namespace gpureap::engine
