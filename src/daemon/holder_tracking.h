#pragma once
// How the daemon finds its holders: by the kernel's events where it allows (HolderTracker),
// else by scans. Chooses, says so in one log line, sets the engine's cadence and hints, and
// gives /metrics the tracking's figures.
#include <memory>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/holder_tracker.h"
#include "engine/engine.h"
#include "sample/sample.h"

namespace gpureap::daemon {

// How the tracker's events name GPU files, for the log: "files named by file handle" or "...
// by file descriptor".
std::string event_source_text(const HolderTracker& tracker);

// The engine's cadence for this config: with events tracking the holders, scans are the
// safety net (event_full_scan_interval); holder scans stay on their interval where forks
// cannot be followed (they find a holder's new children).
engine::Cadence cadence(const DaemonConfig& c, const HolderTracker* tracker);

// Starts the tracker when the config asks for events and the kernel gives them (null
// otherwise, said in the log), and makes it the engine's scan hints. Before engine.start().
std::shared_ptr<HolderTracker> start_holder_tracking(const DaemonConfig& c,
                                                     const std::vector<std::string>& gpu_files,
                                                     engine::Engine& engine);

// /metrics: gpureap_holder_tracking_mode and, with events, the events' counters.
class TrackingMetrics final : public sample::SampleConsumer {
 public:
  explicit TrackingMetrics(std::shared_ptr<const HolderTracker> tracker)
      : tracker_(std::move(tracker)) {}
  void on_sample(const sample::Sample&, const history::History&) override {}
  void add_metrics(std::vector<exporter::MetricFamily>& out) const override;

 private:
  std::shared_ptr<const HolderTracker> tracker_;
};

}  // namespace gpureap::daemon
