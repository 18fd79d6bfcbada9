#pragma once
// When the engine first saw each PID the driver lists (core::ProcView::listed_since): a number
// the driver lists names the process it listed only if that process started before the
// listing was first seen; one that started later has the PID reused. Kept while the PID stays
// listed (on any GPU, one whose process lists failed in part included), and while a GPU that
// listed it does not answer (an error, a list that failed, its backend down): not knowing is no
// evidence that the listing went. Dropped once the GPUs that listed it answer without it.
//
// Start times are in 10 ms ticks, so a process that took the number in the tick the listing was
// first seen in starts no later than that sighting. The start of the process /proc showed under
// the number just after that first reading (core::ProcView::listed_first_process) tells it
// apart: any other process under the number came after it, and is not the listed one.
//
// The listing appeared between the last reading that could have listed it and this one. Where
// a holder of a GPU file had the number and ended in that span (core::ProcView::ends), the
// listing may be that holder's context, kept by what it left behind, and a process that took
// the number after it is not vouched for: the first process is then that ended holder. So for a
// listing kept while its GPU did not answer: a holder of the number that lived there and ended
// meanwhile may have made the context listed when the GPU answers again.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/listed_sightings.h"
#include "core/snapshot.h"

namespace gpureap::engine {

// Now, in clock ticks since boot: CLOCK_BOOTTIME in sysconf(_SC_CLK_TCK) units, the clock and
// unit of /proc/PID/stat's starttime (core::ProcessStat::start_ticks).
uint64_t boot_ticks_now();

class ListedSince {
 public:
  // After a driver reading: `now_ticks` is taken once the reading returned, so every process
  // it lists started by then. `fresh` is a view of /proc read after that reading, null when
  // the view is older (it may show a number's earlier process). `ends`: the ends seen of GPU-file
  // holders (core::ProcView::ends). Returns every PID listed now with when it was first seen
  // listed.
  const std::map<pid_t, uint64_t>& update(
      const core::DriverReading& drivers, uint64_t now_ticks, const core::ProcView* fresh,
      const std::map<pid_t, std::vector<core::ProcessEnd>>& ends = {});
  // Each listed PID's process in the fresh view of its first sighting, by its start time,
  // where that view had one under the number that started by the reading.
  const std::map<pid_t, uint64_t>& first_processes() const { return first_; }

  // The listings and the GPUs' last readings, for the next run (core::CarriedSightings).
  void carry_into(core::CarriedSightings& out) const;
  // Before the first update: a previous run's, taken on whole. A process that took a listed
  // number while nobody read the lists is not the listed one: a listing that ended and came
  // back meanwhile (its own) is dated as of the last run, which fails safe (it is disowned,
  // never signalled), as a first sighting would not (a newcomer holding the GPU's file passes).
  void carry_over(const core::CarriedSightings& carried);

 private:
  struct Listing {
    uint64_t since = 0;
    std::optional<uint64_t> first_process;  // its start time
    std::set<std::string> gpus;             // the GPUs (core::Gpu::key) that listed it last
    // Kept while a GPU that listed it did not answer: that GPU's last reading before. The
    // listing may have ended and come back meanwhile as a holder of the number's own.
    std::optional<uint64_t> unanswered_since;
  };
  std::map<pid_t, Listing> listings_;
  // When each GPU's process lists were last read (by Gpu::key): the last read before this one is
  // the last that could have shown a listing first seen now.
  std::map<std::string, uint64_t> last_read_;
  std::map<pid_t, uint64_t> since_, first_;  // what update() and first_processes() return
};

}  // namespace gpureap::engine
