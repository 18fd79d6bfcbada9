#include "daemon/holder_tracking.h"

#include "base/log.h"
#include "core/duration.h"
#include "metric/names.h"

namespace gpureap::daemon {

std::string event_source_text(const HolderTracker& tracker) {
  return tracker.event_source() == track::FanotifyWatch::Source::FileHandles
             ? "files named by file handle"
             : "files named by file descriptor";
}

engine::Cadence cadence(const DaemonConfig& c, const HolderTracker* tracker) {
  engine::Cadence k{c.interval, c.holder_scan_interval, c.full_scan_interval, c.driver_timeout,
                    true};
  if (!tracker) return k;
  k.full_scan_interval = c.event_full_scan_interval;
  if (tracker->follows_forks()) k.holder_scan_interval = c.event_full_scan_interval;
  return k;
}

std::shared_ptr<HolderTracker> start_holder_tracking(const DaemonConfig& c,
                                                     const std::vector<std::string>& gpu_files,
                                                     engine::Engine& engine) {
  const std::string scans = "holder scans every " + core::format_duration(c.holder_scan_interval) +
                            ", all fds every " + core::format_duration(c.full_scan_interval);
  if (!c.holder_events) {
    base::log_info("holder tracking: scans (holder_events = false): " + scans);
    return nullptr;
  }
  auto started = HolderTracker::start(gpu_files, engine.procfs(), [&engine] { engine.wake(); });
  if (!started) {
    base::log_notice("holder tracking: scans, the kernel's events are not available: " +
                     started.error().text() + "; " + scans);
    return nullptr;
  }
  auto tracker = *started;
  engine.set_scan_hints(tracker);
  std::string forks = tracker->follows_forks()
                          ? "forks through the proc connector"
                          : "forks found by holder scans every " +
                                core::format_duration(c.holder_scan_interval) + " (" +
                                tracker->forks_unavailable().value_or("") + ")";
  base::log_info("holder tracking: events (fanotify on " + std::to_string(gpu_files.size()) +
                 " GPU device files, " + event_source_text(*tracker) + ", " + forks +
                 "); all fds every " + core::format_duration(c.event_full_scan_interval));
  if (tracker->event_source() == track::FanotifyWatch::Source::Fds)
    base::log_notice("holder tracking: " + tracker->event_source_fallback() +
                     ": events carry open file descriptors instead, so the kernel opens the GPU "
                     "device file in the daemon for each event (a newer kernel, or a dev root "
                     "on a filesystem with file handles, avoids it)");
  return tracker;
}

void TrackingMetrics::add_metrics(std::vector<exporter::MetricFamily>& out) const {
  const char* mode = !tracker_ ? "scans" : tracker_->follows_forks() ? "events" : "opens";
  exporter::MetricFamily m{metric::kHolderTrackingMode,
                           "1 for how holders are found: events (opens, final closes and forks "
                           "from the kernel), opens (forks by scans) or scans"};
  for (const char* each : {"events", "opens", "scans"})
    m.add({{metric::label::kMode, each}}, std::string(each) == mode ? 1 : 0);
  out.push_back(std::move(m));
  if (!tracker_) return;
  auto c = tracker_->counters();
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    exporter::MetricFamily f{name, help, exporter::MetricType::Counter};
    f.add({}, static_cast<double>(v));
    out.push_back(std::move(f));
  };
  counter(metric::kHolderOpens, "opens of GPU device files the kernel reported", c.opens);
  counter(metric::kHolderCloses,
          "final closes of GPU device files (an open file released, its memory freed)", c.closes);
  counter(metric::kHolderForks, "forks of holders followed", c.forks);
  counter(metric::kHolderEventOverflows,
          "times events were lost, in the kernel's queues or the daemon's bounded records (of "
          "recent forks, of the ends read while a scan ran) (each led to a full scan)",
          c.overflows);
  counter(metric::kHolderTrackingDrift,
          "holders a full scan found that events had missed, or had let go unseen", c.drift);
}

}  // namespace gpureap::daemon
