#pragma once
// The daemon's incident journal: who held each GPU and what happened to them, for the report's
// timelines. A lane is one process's hold on one GPU, from the first sample that saw it (its
// open, or the fork that gave it the parent's files) to the last (its final close, its exit,
// or, for a PID that became a ghost, the sample where the driver stopped listing it). Events
// are the moments on the lanes: forks, exits, the sample where a PID became a ghost, a leak,
// a holder stopped or resumed, a signal a gpureap command announced (with the user the daemon
// read from the socket's peer credentials), a reset, a driver error, memory coming back.
//
// Built from the samples (every snapshot says who holds what, who is gone, who is stopped), so
// it needs neither root nor the kernel's events; where the daemon follows them (EventClock),
// a lane starts at its open or fork and ends at its final close, to the millisecond. Bounded: lanes
// and events past the window go, and each list has a hard cap (the oldest first). Thread-safe: the
// engine's thread records, the socket's and HTTP's threads query.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/kernel_event.h"
#include "core/snapshot.h"

namespace gpureap::history {

using JournalTime = std::chrono::system_clock::time_point;

struct JournalLane {
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // 0: first seen gone (the driver lists it, /proc does not)
  unsigned gpu = 0;
  pid_t ppid = 0;
  std::string comm;  // the name it had while alive (untrusted)
  std::string user;
  JournalTime first_seen, last_seen;
  bool listed = false;                // the driver listed it on the GPU (its own context)
  bool keeper = false;                // it kept a gone PID's context on the GPU alive
  std::optional<JournalTime> exited;  // gone from /proc
  std::optional<JournalTime> ghost;   // listed while gone: from here its lane is a ghost's
  bool leaked = false;                // a ghost nothing alive holds
  bool stopped = false;               // stopped (T) at its last sample
  bool open = true;                   // seen in the latest sample
  uint64_t peak_bytes = 0;
};

enum class JournalEventKind {
  Fork,        // pid forked other (the child inherited its GPU files)
  Exit,        // pid left /proc
  Ghost,       // pid is gone but the driver still lists it
  Leak,        // the ghost pid is kept by nothing alive
  Stopped,     // pid was stopped (SIGSTOP, Ctrl-Z)
  Resumed,     // ... and runs again
  Close,       // pid no longer holds the GPU's files (the sample after its final close)
  MemoryBack,  // a ghost's listing is gone: the driver freed its memory
  Signal,      // a gpureap command announced a signal to pid
  Reset,       // a gpureap command announced a reset of the GPU
  GpuError,    // a driver logged a GPU error (pid: the process it named, 0: none)
};
const char* to_string(JournalEventKind kind);

struct JournalEvent {
  JournalTime at;
  JournalEventKind kind = JournalEventKind::Fork;
  std::optional<unsigned> gpu;  // empty: every GPU the pid is on
  pid_t pid = 0;
  pid_t other = 0;  // Fork: the child
  uint64_t bytes = 0;
  // Signal: the signal; GpuError: "<kind> 31 ..." (untrusted parts included); Exit of a
  // distributed job's rank: "rank 3 of job PID 4200, SIGKILL".
  std::string text;
  // Signal and Reset: who asked. The user is the daemon's reading of the peer's uid.
  std::optional<uid_t> uid;
  std::string user;
  std::string command;  // "gpureap kill 4242"
  std::string reason;
};

struct JournalView {
  std::vector<JournalLane> lanes;    // by GPU, then first seen
  std::vector<JournalEvent> events;  // in time order
};

// What a gpureap command said it is about to do (daemon/local_protocol's announce), with the
// peer's credentials as the daemon read them.
struct Announcement {
  JournalTime at;
  uid_t uid = 0;
  std::string user;
  std::string command;
  std::string signal;  // "SIGTERM", ...; "reset"
  std::string reason;
  std::optional<unsigned> gpu;
  struct Target {
    pid_t pid = 0;
    uint64_t start_ticks = 0;
    std::string comm;
    std::optional<unsigned> gpu;
  };
  std::vector<Target> targets;
};

// The exact moments the kernel's events gave (the daemon's holder tracker), where it runs: a
// lane then starts at its process's open or fork and ends at its final close, not at the
// samples around them. Either may be empty.
struct EventClock {
  std::function<std::optional<JournalTime>(pid_t)> began;     // first open, or the fork
  std::function<std::optional<JournalTime>(pid_t)> released;  // last final close
};

struct JournalLimits {
  std::chrono::milliseconds window{std::chrono::hours(1)};
  size_t max_lanes = 4096;
  size_t max_events = 16384;
};

class Journal {
 public:
  explicit Journal(JournalLimits limits = {}) : limits_(limits) {}
  void set_limits(const JournalLimits& limits);

  void record(const core::Snapshot& snapshot, const EventClock& clock = {});
  void announce(const Announcement& announcement);
  // Driver errors the daemon's kernel log follower read: those not seen before are kept.
  void record_kernel_events(const std::vector<core::KernelGpuEvent>& events);

  // Lanes that overlap [since, until] and the events within it.
  JournalView query(JournalTime since, JournalTime until) const;

 private:
  using LaneKey = std::tuple<pid_t, uint64_t, unsigned>;  // pid, start ticks, GPU
  void add_event(JournalEvent e);
  void trim(JournalTime now);

  mutable std::mutex mutex_;
  JournalLimits limits_;
  std::map<LaneKey, JournalLane> lanes_;
  std::deque<JournalEvent> events_;
  std::map<pid_t, std::string> names_;      // the last name a live PID had, for its ghost
  uint64_t kernel_seq_ = 0;                 // the newest kernel record already kept
  std::optional<JournalTime> last_record_;  // the previous sample's time
};

}  // namespace gpureap::history
