#pragma once
// `top`'s snapshots from the node's daemon instead of its own engine: a small thread asks for
// the daemon's latest sample every interval (the daemon sees every user's processes when it
// runs as root, and costs this terminal no scan). The fetch itself is the cli's (the daemon's
// local socket); this only paces it and publishes what it returns as the engine would.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "collect/collector.h"
#include "core/snapshot.h"
#include "engine/engine.h"

namespace gpureap::tui {

// The daemon's latest snapshot, or empty when it does not answer (any failure).
using SnapshotFetch = std::function<std::optional<core::Snapshot>()>;

class DaemonFeed {
 public:
  // `host` gives the host's load and memory, read here: they are this machine's either way.
  DaemonFeed(SnapshotFetch fetch, std::shared_ptr<const collect::Collector> host,
             std::chrono::milliseconds interval);
  ~DaemonFeed();  // stop()
  DaemonFeed(const DaemonFeed&) = delete;
  DaemonFeed& operator=(const DaemonFeed&) = delete;

  // Asks once on the caller's thread: false (and nothing started) when the daemon does not
  // answer, so top samples on its own from the start.
  bool start();
  void stop();
  // A fetch now instead of at the next tick (after a kill).
  void wake();
  engine::Published published() const;
  // The daemon stopped answering after it had: top goes on with its own engine.
  bool failed() const;

 private:
  void run();
  bool fetch_once();

  SnapshotFetch fetch_;
  std::shared_ptr<const collect::Collector> host_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  engine::Published published_;
  bool stopping_ = false, woken_ = false, failed_ = false;
  std::thread thread_;
};

}  // namespace gpureap::tui
