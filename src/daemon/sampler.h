#pragma once
// The daemon's sampling loop: the driver every `interval` (through the BackendWatchdog, so a
// wedged driver never stalls it), /proc every `holder_scan_interval` and at once when the
// driver's view moves; then the join, the history, doctor's findings and the /metrics text,
// published as one immutable Sample.
//
// Reading every process's fd links is nearly all of the daemon's cost, so a holder scan reads
// the fd tables of new processes and of known holders only (and everyone's stat); every
// `full_scan_interval` it reads them all, for the rare long-lived process that opens a GPU
// file without the driver listing it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/watchdog.h"
#include "collect/collector.h"
#include "daemon/driver_view.h"
#include "doctor/unattributed_threshold.h"
#include "engine/sample.h"
#include "history/history.h"
#include "procfs/ipc_residue.h"

namespace gpureap::daemon {

struct SamplerSettings {
  std::chrono::milliseconds interval{std::chrono::seconds(1)};
  std::chrono::milliseconds holder_scan_interval{std::chrono::seconds(10)};
  std::chrono::milliseconds full_scan_interval{std::chrono::minutes(1)};
  std::chrono::milliseconds driver_timeout{std::chrono::seconds(5)};
  bool per_process_metrics = false;
  doctor::UnattributedThreshold unattributed_threshold;
};

inline constexpr std::chrono::minutes kIpcResidueEvery{5};

class Sampler {
 public:
  // The collector's backends are read every sample, with the settings' driver_timeout.
  Sampler(collect::Collector collector, std::string dev_root, SamplerSettings settings,
          std::shared_ptr<history::History> history);
  ~Sampler();  // stops the thread

  // Before start(): consumers are called in the order added.
  void add_consumer(std::shared_ptr<engine::SampleConsumer> consumer);

  // One sample, on the caller's thread (tests; the loop calls it).
  void sample_once();
  // Samples at once, then every interval, on its own thread until stop().
  void start();
  void stop();
  // New settings take effect from the next sample.
  void apply(const SamplerSettings& settings);
  // The next sample scans /proc in full (every fd table), whatever the intervals say.
  void request_full_scan() { full_scan_requested_ = true; }

  std::shared_ptr<const engine::Sample> latest() const;
  // When the loop last finished a sample; the daemon's liveness (watchdog, /healthz).
  std::chrono::steady_clock::time_point last_progress() const;
  const history::History& history() const { return *history_; }

 private:
  void loop();
  void note_driver(const core::DriverReading& drivers, bool timed_out);

  collect::Collector collector_;
  std::string dev_root_;
  std::shared_ptr<history::History> history_;
  std::vector<std::shared_ptr<engine::SampleConsumer>> consumers_;

  mutable std::mutex mutex_;  // guards settings_, latest_, stop_
  std::condition_variable wake_;
  SamplerSettings settings_;
  std::shared_ptr<const engine::Sample> latest_;
  bool stop_ = false;
  std::thread thread_;
  std::atomic<std::chrono::steady_clock::rep> progress_{0};
  std::atomic<bool> full_scan_requested_{false};

  // Only the sampling thread touches these.
  std::optional<core::ProcView> view_;  // the latest holder scan, joined with every driver report
  DriverView view_at_scan_;
  procfs::IpcResidue ipc_;
  std::string hostname_;
  std::chrono::steady_clock::time_point next_scan_{}, next_full_scan_{}, next_ipc_check_{};
  std::optional<double> driver_seconds_, scan_seconds_;
  uint64_t driver_errors_ = 0, scan_errors_ = 0, sequence_ = 0;
  std::optional<bool> driver_was_up_;
};

}  // namespace gpureap::daemon
