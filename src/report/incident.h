#pragma once
// The daemon's incident journal as the report reads it (the `incident` part of a
// gpureap.history/v1 document, daemon/incident.h): the GPUs' names, a lane per process that
// held a GPU, the events on them (forks, exits, ghosts, leaks, stops, signals and who sent
// them, GPU errors, memory coming back) and the state now with each problem's remedy. Read
// strictly: a field of the wrong type is an error naming it.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "history/journal.h"
#include "report/page.h"

namespace gpureap::report {

struct IncidentGpu {
  unsigned gpu = 0;
  std::string name, uuid;  // untrusted
  std::optional<uint64_t> total_bytes;
};

// The journal's lanes and events, as history/journal_document reads them back.
using IncidentLane = history::JournalLane;
using IncidentEvent = history::JournalEvent;

struct IncidentNowGpu {
  unsigned gpu = 0;
  std::string state;
  std::optional<uint64_t> used_bytes, total_bytes, unattributed_bytes;
  uint64_t attributed_bytes = 0, ghost_bytes = 0, leaked_bytes = 0;
  std::vector<pid_t> stopped;
  struct Instance {
    std::string place, label;  // "0/3", "<kind> 3g.40gb" (untrusted)
    std::optional<uint64_t> used_bytes, total_bytes;
    // "0/3 <kind> 3g.40gb", or the place alone.
    std::string words() const { return label.empty() ? place : place + " " + label; }
  };
  std::vector<Instance> instances;  // of a split GPU
};

struct IncidentNow {
  TimePoint at;
  std::vector<IncidentNowGpu> gpus;
  std::vector<NowProblem> problems;
};

struct Incident {
  std::vector<IncidentGpu> gpus;
  std::vector<IncidentLane> lanes;
  std::vector<IncidentEvent> events;
  std::optional<IncidentNow> now;

  const IncidentGpu* gpu(unsigned index) const;
  // The name a PID had while alive (its lanes'), empty when the journal never saw it.
  std::string name_of(pid_t pid) const;
};

// The `incident` object; an error names the field that is wrong.
core::Result<Incident> parse_incident(const nlohmann::json& incident);

// "GPU-8f3a2c1e": a UUID short enough for a heading.
std::string short_uuid(const std::string& uuid);
// "GPU 0 · <its name> · GPU-8f3a2c1e" (untrusted name).
std::string gpu_heading(unsigned gpu, const std::string& name, const std::string& uuid);

// The lanes of `gpu` over [from, to], with their marks: the timeline under its chart.
Timeline build_timeline(const Incident& incident, unsigned gpu, TimePoint from, TimePoint to);

// The now box.
NowBox build_now(const Incident& incident);

// "ended by `gpureap kill 4242` (root) at 14:02:11": the announced signal to any of `pids`
// within [from, until], the latest first; empty when none.
std::optional<IncidentEvent> announced_signal(const Incident& incident,
                                              const std::vector<pid_t>& pids, TimePoint from,
                                              TimePoint until);

}  // namespace gpureap::report
