#pragma once
// Samples on a thread of its own, so the UI never waits for /proc or the driver: the UI takes
// the latest immutable snapshot whenever it draws. A collection that does not return (a
// wedged driver the deadline backend could not shield, a hung procfs) is detected by time, and
// stopping never waits for it.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "collect/collector.h"
#include "core/snapshot.h"
#include "tui/host_stats.h"

namespace gpureap::tui {

struct Sample {
  std::shared_ptr<const core::Snapshot> snapshot;
  HostStats host;
  uint64_t generation = 0;  // 0: nothing sampled yet
  std::chrono::steady_clock::time_point at{};
  std::optional<std::string> error;  // the last collection failed (the snapshot is the one before)
};

class Sampler {
 public:
  Sampler(std::shared_ptr<const collect::Collector> collector, std::string proc_root,
          std::chrono::milliseconds interval);
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  ~Sampler();

  void start();
  Sample latest() const;
  // How long the collection in progress has been running; empty while idle.
  std::optional<std::chrono::steady_clock::duration> busy_for() const;
  // Sample now instead of at the next tick (after a kill).
  void wake();
  // Stops the thread. False when it is stuck in a collection: it is then left behind
  // (detached), and the process should leave with _exit rather than wait for it.
  bool stop(std::chrono::milliseconds wait = std::chrono::milliseconds(500));

 private:
  struct State;
  static void loop(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
};

}  // namespace gpureap::tui
