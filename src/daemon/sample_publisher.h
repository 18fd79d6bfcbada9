#pragma once
// The daemon's consumer of the sampling engine: each Collection becomes a Sample (the history
// recorded, doctor's findings over it and the one before, the /metrics text rendered once),
// published immutable for the HTTP handlers and handed to the daemon's own consumers (cleanup
// policies, alerts, the audit log's metrics) in order.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "collect/work_servers.h"
#include "doctor/stalled_job.h"
#include "doctor/unattributed_threshold.h"
#include "engine/collection.h"
#include "history/history.h"
#include "kernel/gpu_events.h"
#include "sample/sample.h"

namespace gpureap::daemon {

struct PublishSettings {
  bool per_process_metrics = false;
  doctor::UnattributedThreshold unattributed_threshold;
  std::chrono::milliseconds stalled_job_critical_after = doctor::kStalledJobCriticalAfter;
};

class SamplePublisher final : public engine::CollectionConsumer {
 public:
  // Every sample carries kSettleAnchors earlier snapshots, each at least kSettleSpacing after
  // the one before: `doctor` through the daemon gets a first sample at least --settle old for
  // any settle up to (kSettleAnchors - 1) × kSettleSpacing, for the price of a few snapshots.
  static constexpr std::chrono::milliseconds kSettleSpacing{5000};
  static constexpr size_t kSettleAnchors = 4;

  SamplePublisher(PublishSettings settings, std::shared_ptr<history::History> history);

  // Before the engine starts: consumers are called in the order added.
  void add_consumer(std::shared_ptr<sample::SampleConsumer> consumer);
  // Before the engine starts: follow the kernel log at `path` (/dev/kmsg, or a saved log that
  // grows) for GPU errors; each sample reads only what was written since the one before.
  void follow_kernel_log(const std::string& path, kernel::KernelLogParsers parsers);
  // Before the engine starts: where the logs of `servers` (WorkServer::log_files)
  // are, under the host's `runtime_root` (the servers' environments are read under
  // `proc_root`): doctor's evidence when a server hits a fault, as `gpureap doctor` gives.
  void follow_work_server_logs(std::string runtime_root, std::string proc_root,
                               collect::WorkServers servers);
  // From any thread; takes effect from the next sample.
  void apply(const PublishSettings& settings);

  void on_collection(const engine::Collection& collection) override;
  void on_failure(const std::string& what) override;

  std::shared_ptr<const sample::Sample> latest() const;
  // When a sample was last published (and its consumers returned): the daemon's liveness
  // (systemd's watchdog, /healthz).
  std::chrono::steady_clock::time_point last_progress() const;
  const history::History& history() const { return *history_; }

 private:
  void note_driver(const engine::Collection& collection);

  std::shared_ptr<history::History> history_;
  std::vector<std::shared_ptr<sample::SampleConsumer>> consumers_;

  mutable std::mutex mutex_;  // guards settings_ and latest_
  PublishSettings settings_;
  std::shared_ptr<const sample::Sample> latest_;
  std::atomic<std::chrono::steady_clock::rep> progress_{0};

  // Only the engine's thread touches these.
  std::optional<bool> driver_was_up_;
  std::vector<sample::TimedSnapshot> anchors_;  // oldest first
  std::unique_ptr<kernel::KernelLogFollower> kernel_log_;
  std::shared_ptr<const core::KernelLog> kernel_view_;  // the follower's log as of its last change
  bool kernel_log_problem_told_ = false;
  struct WorkServerLogs {
    std::string runtime_root, proc_root;
    collect::WorkServers servers;
  };
  std::optional<WorkServerLogs> work_server_logs_;
};

}  // namespace gpureap::daemon
