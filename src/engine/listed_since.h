#pragma once
// When the engine first saw each PID the driver lists (core::ProcView::listed_since): a number
// the driver lists names the process it listed only if that process started before the
// listing was first seen; one that started later has the PID reused. Kept while the PID stays
// listed (on any GPU), and while a GPU that listed it does not answer (an error, its backend
// down): not knowing is no evidence that the listing went. Dropped once the GPUs that listed
// it answer without it.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>

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
  struct Listing {
    uint64_t since = 0;
    std::set<std::string> gpus;  // the GPUs (core::Gpu::key) that listed it last
  };
  std::map<pid_t, Listing> listings_;
  std::map<pid_t, uint64_t> since_;  // what update() returns
};

}  // namespace gpureap::engine
