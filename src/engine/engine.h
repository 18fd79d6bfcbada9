#pragma once
// The sampling engine every live view uses (the daemon, `top`, `ps --watch`, `run`): one
// thread collects on the Cadence (ScheduledCollector) and publishes each Collection, immutable,
// to its consumers in order and to whoever asks for the latest. A collection that does not
// return (a hung procfs, a driver without a deadline) is seen by time (busy_for), and a
// bounded stop leaves it behind instead of waiting for it.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "collect/collector.h"
#include "engine/collection.h"
#include "engine/driver.h"
#include "engine/scan_hints.h"
#include "engine/scan_schedule.h"

namespace gpureap::engine {

// What the engine has published so far.
struct Published {
  std::shared_ptr<const Collection> latest;  // null until a collection succeeds
  std::optional<std::string> error;          // the last collection threw this (latest is older)
  uint64_t rounds = 0;                       // collections finished or failed; 0: none yet
};

class Engine {
 public:
  // Reads the collector's backends (engine::Driver) on the cadence.
  Engine(collect::Collector collector, Cadence cadence);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();  // stops, waiting a moment at most

  // Before start(): consumers are called in the order added.
  void add_consumer(std::shared_ptr<CollectionConsumer> consumer);
  // Before start(): an event source that asks for scans when the machine changes.
  void set_scan_hints(std::shared_ptr<ScanHints> hints);
  // Before start(): each collection carries what a next run would take on
  // (Collection::carried), and `previous`, a previous run's on this boot, is taken on.
  void carry_sightings(std::optional<core::CarriedSightings> previous);
  // The proc root it reads (immutable; from any thread): where an event source confirms what
  // it was told.
  const procfs::ProcFs& procfs() const;

  // Starts the thread: a collection at once (unless the interval is 0), then on the cadence.
  // Call after a job is forked (`run`): the driver is loaded on the first collection and its
  // file descriptors must not leak into the job.
  void start();
  // One collection on the caller's thread, published as the thread's are; not while started.
  void collect_once();
  // Stops the thread, interrupting a read that waits for the driver. With `wait`, a thread
  // still stuck in a collection after it is left behind (detached, keeping what it uses
  // alive): false then, and the program should leave with _exit rather than wait for it.
  bool stop(std::optional<std::chrono::milliseconds> wait = std::nullopt);

  // From any thread; takes effect from the next collection.
  void apply(const Cadence& cadence);
  // A collection now instead of at the next tick (top after a kill).
  void wake();
  // A collection that began after this call; null when none completes within `timeout` or
  // the thread is not running.
  std::shared_ptr<const Collection> fresh(std::chrono::milliseconds timeout);
  // The latest collection once it is newer than `sequence`; null after `timeout`.
  std::shared_ptr<const Collection> newer_than(uint64_t sequence,
                                               std::chrono::milliseconds timeout) const;

  std::shared_ptr<const Collection> latest() const;
  Published published() const;
  // How long the collection in progress has been running; empty while idle.
  std::optional<Clock::duration> busy_for() const;
  const Driver& driver() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace gpureap::engine
