#pragma once
// What one collection of the engine produced: the joined snapshot and what was collected with
// it (the host's load and memory, the IPC residue), immutable once published.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/listed_sightings.h"
#include "core/snapshot.h"
#include "procfs/host_stats.h"
#include "procfs/ipc_residue.h"

namespace gpureap::engine {

// How long one part of a collection took, and how often it failed so far.
struct PartTiming {
  std::optional<double> seconds;  // the latest time it ran; empty until it has
  uint64_t errors = 0;
};

struct Collection {
  uint64_t sequence = 0;  // 1 for the first
  std::shared_ptr<const core::Snapshot> snapshot;
  procfs::HostStats host;
  // As of the latest check (Cadence::ipc_residue); empty when the engine does not look.
  std::shared_ptr<const procfs::IpcResidue> ipc_residue;
  bool driver_timed_out = false;  // the backend is down because it did not answer
  bool holder_scan = false;       // this collection scanned /proc again
  bool full_scan = false;         // ... reading every process's fd table
  PartTiming driver, scan;
  std::chrono::steady_clock::time_point began, ended;
  // What the next run is to take on, where the engine keeps it (Engine::carry_sightings); its
  // boot_id is the keeper's to fill.
  std::shared_ptr<const core::CarriedSightings> carried;
};

// Something that acts on every collection, on the engine's thread, after it is published. It
// must return quickly: the next collection waits for it.
class CollectionConsumer {
 public:
  virtual ~CollectionConsumer() = default;
  virtual void on_collection(const Collection& collection) = 0;
  // A collection that threw: it is skipped, the engine goes on.
  virtual void on_failure(const std::string& what) { (void)what; }
};

}  // namespace gpureap::engine
