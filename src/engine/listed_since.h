#pragma once
// When the engine first saw each PID the driver lists (core::ProcView::listed_since): a number
// the driver lists names the process it listed only if that process started before the
// listing was first seen; one that started later has the PID reused. Kept while the PID stays
// listed in every reading (on any GPU), dropped at the first reading without it (a driver that
// did not answer lists nothing: what it would have listed meanwhile is not known).
#include <sys/types.h>

#include <cstdint>
#include <map>

#include "core/gpu.h"

namespace gpureap::engine {

// Now, in clock ticks since boot: CLOCK_BOOTTIME in sysconf(_SC_CLK_TCK) units, the clock and
// unit of /proc/PID/stat's starttime (core::ProcessStat::start_ticks).
uint64_t boot_ticks_now();

class ListedSince {
 public:
  // After a driver reading: `now_ticks` is taken once the reading returned, so every process
  // it lists started by then. Returns every PID listed now with when it was first seen listed.
  const std::map<pid_t, uint64_t>& update(const core::DriverReading& drivers, uint64_t now_ticks);

 private:
  std::map<pid_t, uint64_t> since_;
};

}  // namespace gpureap::engine
