#pragma once
// The time series of the daemon's history, as plain data: what the History keeps and what
// /api/v1/history serves (history/history_document writes and reads them). Unknown values are empty
// optionals, as everywhere in gpureap.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpureap::history {

using TimePoint = std::chrono::system_clock::time_point;

// One sample of one GPU.
struct GpuPoint {
  TimePoint time;
  std::optional<uint64_t> used_bytes;
  std::optional<uint64_t> unattributed_bytes;
  std::optional<uint64_t> ghost_bytes;
  std::optional<unsigned> utilization_percent;
  unsigned processes = 0;  // rows the driver lists on it
};

struct GpuSeries {
  unsigned gpu = 0;
  std::string uuid;
  std::optional<uint64_t> total_bytes;  // the GPU's memory, as last read
  std::vector<GpuPoint> points;         // oldest first, one per sample
};

// A change of one process's use of one GPU: the values hold from `time` until the next point
// (or until the track's last_seen). Steady processes cost one point, not one per sample.
struct ProcessPoint {
  TimePoint time;
  std::optional<uint64_t> used_bytes;
  std::optional<unsigned> sm_utilization_percent;
};

// A process identity: a PID is reused, a PID and its start time are not. Gone processes
// (listed by the driver, absent from /proc) have start_ticks 0.
struct ProcessKey {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  auto operator<=>(const ProcessKey&) const = default;
};

// A live process that kept a gone PID's context (core::Ghost::keepers), as last seen.
struct Keeper {
  pid_t pid = 0;
  std::string comm;
  bool operator==(const Keeper&) const = default;
};

struct ProcessTrack {
  ProcessKey key;
  unsigned gpu = 0;
  std::string comm;
  std::string user;
  std::string container;
  TimePoint first_seen;
  TimePoint last_seen;
  std::vector<ProcessPoint> points;  // oldest first
  std::vector<Keeper> keepers;       // a gone PID's keepers over its track (bounded)
};

struct HistoryView {
  std::chrono::milliseconds window{0};
  std::chrono::milliseconds interval{0};
  std::vector<GpuSeries> gpus;
  std::vector<ProcessTrack> processes;
};

}  // namespace gpureap::history
