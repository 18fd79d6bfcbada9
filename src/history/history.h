#pragma once
// Ring buffers of what the daemon sampled: per GPU (memory, utilisation, one point per
// interval) and per process and GPU (memory, SM utilisation, one point per change). The basis
// of /api/v1/history and of the idle and duration conditions that cleanup policies will use.
//
// On a grid: time is cut into slots of `interval`, and each series keeps at most one point per
// slot. Samples the daemon takes between its ticks (the kernel's holder events wake it at
// once) update the slot's point instead of adding one, so however many samples arrive the
// history spans its whole window: a storm of opens cannot push its past out.
//
// Bounded: a GPU keeps window/interval points; processes are tracked up to max_processes
// (the longest unseen goes first) and share a budget of process points (the busiest track
// loses its oldest points first). Thread-safe: the engine's thread records, HTTP handlers query.
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/snapshot.h"
#include "history/ring.h"
#include "history/series.h"

namespace gpureap::history {

struct HistoryLimits {
  std::chrono::milliseconds window{std::chrono::hours(1)};
  std::chrono::milliseconds interval{std::chrono::seconds(1)};
  size_t max_processes = 1024;
  size_t max_process_points = 131072;  // all process tracks together (~3 MiB)
};

struct HistoryQuery {
  std::optional<unsigned> gpu;  // empty: every GPU
  TimePoint since;  // points at or after this time (a process point holding then counts)
};

class History {
 public:
  explicit History(HistoryLimits limits = {});

  // A smaller window or bound trims at once.
  void set_limits(const HistoryLimits& limits);
  HistoryLimits limits() const;

  void record(const core::Snapshot& snapshot);

  HistoryView query(const HistoryQuery& query) const;

  // Since when the process's SM utilisation on `gpu` has stayed below `below_percent`,
  // without a gap in the record; empty when it is not below now or is unknown (an unknown
  // utilisation never proves a process idle). Clipped to the window.
  std::optional<TimePoint> below_since(const ProcessKey& key, unsigned gpu,
                                       unsigned below_percent) const;

  size_t process_points() const;  // stored, all tracks together

 private:
  // Compact points: unknown is the type's maximum, so a sample costs tens of bytes.
  struct GpuSample {
    int64_t t_ms = 0;
    uint64_t used = UINT64_MAX, unattributed = UINT64_MAX, ghost = UINT64_MAX;
    uint16_t util = UINT16_MAX;
    uint16_t processes = 0;
  };
  struct ProcessSample {
    int64_t t_ms = 0;
    uint64_t used = UINT64_MAX;
    uint16_t sm_util = UINT16_MAX;
  };
  struct GpuTrack {
    std::string uuid;
    std::optional<uint64_t> total;
    Ring<GpuSample> samples;
  };
  struct Track {
    std::string comm, user, container;
    int64_t first_seen_ms = 0, last_seen_ms = 0;
    Ring<ProcessSample> samples;
    std::vector<Keeper> keepers;
  };
  using TrackKey = std::pair<ProcessKey, unsigned>;  // process, GPU index

  size_t samples_per_series() const;
  void trim(int64_t now_ms);
  void enforce_process_bounds();

  mutable std::mutex mutex_;
  HistoryLimits limits_;
  std::map<unsigned, GpuTrack> gpus_;
  std::map<TrackKey, Track> tracks_;
  size_t process_points_ = 0;
  int64_t latest_ms_ = 0;  // time of the latest record
};

// The identity the history uses for a row.
ProcessKey process_key(const core::ProcessRow& row);

}  // namespace gpureap::history
