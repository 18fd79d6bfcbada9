#pragma once
// One collection at a time, on the schedule: the driver (through the engine's one Driver),
// /proc when the ScanSchedule says so (a rescan reuses the latest view), between scans what
// events name and the processes whose end a scan would see (EndedProcesses), the driver-listed
// PIDs' details and when each was first listed (ListedSince), the join, and what is collected
// with it. Called on one thread only.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collect/collector.h"
#include "engine/collection.h"
#include "engine/driver.h"
#include "engine/ended_processes.h"
#include "engine/known_ends.h"
#include "engine/listed_since.h"
#include "engine/rank_exits.h"
#include "engine/scan_hints.h"
#include "engine/scan_lineage.h"
#include "engine/scan_schedule.h"

namespace gpureap::engine {

class ScheduledCollector {
 public:
  explicit ScheduledCollector(collect::Collector collector)
      : collector_(std::move(collector)), driver_(collector_.drivers()) {}

  // Null when `stopping()` became true once the driver answered: no scan that nobody reads.
  template <class Stopping>
  std::shared_ptr<Collection> collect(const Cadence& cadence, Stopping stopping) {
    const auto began = Clock::now();
    auto driver = read_driver(cadence);
    if (stopping()) return nullptr;
    return complete(cadence, began, std::move(driver));
  }

  // Before the first collection: asked each time whether events call for a scan.
  void set_hints(std::shared_ptr<ScanHints> hints) { hints_ = std::move(hints); }
  // Before the first collection: each collection carries what a next run would take on
  // (Collection::carried), and `previous`, a previous run's, is taken on.
  void carry_sightings(std::optional<core::CarriedSightings> previous);

  const procfs::ProcFs& procfs() const { return collector_.procfs(); }
  Driver& driver() { return driver_; }
  const Driver& driver() const { return driver_; }

 private:
  DriverRead read_driver(const Cadence& cadence);
  std::shared_ptr<Collection> complete(const Cadence& cadence, Clock::time_point began,
                                       DriverRead driver);
  // A previous run's ends and forks, into `view`'s (the forks while their child lives).
  void add_carried(core::ProcView& view, const std::vector<pid_t>& listed);
  std::shared_ptr<const core::CarriedSightings> carried(const core::ProcView& view,
                                                        uint64_t read_at_ticks) const;

  collect::Collector collector_;
  Driver driver_;
  ScanSchedule schedule_;
  std::shared_ptr<ScanHints> hints_;
  ScanLineage lineage_;                 // what one view to the next shows ended (with events too)
  ListedEnds listed_ends_;              // the listed PIDs' ends, kept while listed
  RankExits rank_exits_;                // the jobs' ranks seen ending
  std::optional<core::ProcView> view_;  // the latest scan, with every driver report's details
  EndedProcesses ended_;
  ListedSince listed_since_;
  bool carry_ = false;  // Collection::carried is wanted
  Ends carried_ends_;   // a previous run's, while their number decides
  std::map<pid_t, core::ListedSightings::Fork> carried_forks_;  // ... while each child lives
  std::shared_ptr<const procfs::IpcResidue> ipc_;
  std::string hostname_;
  PartTiming driver_timing_, scan_timing_;
  uint64_t sequence_ = 0;
};

}  // namespace gpureap::engine
