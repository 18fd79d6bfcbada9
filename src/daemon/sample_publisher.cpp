#include "daemon/sample_publisher.h"

#include "base/log.h"
#include "doctor/examine.h"
#include "export/metrics.h"
#include "reap/safety.h"
#include "text/plural.h"

namespace gpureap::daemon {

using Clock = std::chrono::steady_clock;

SamplePublisher::SamplePublisher(PublishSettings settings,
                                 std::shared_ptr<history::History> history)
    : history_(std::move(history)), settings_(std::move(settings)) {}

void SamplePublisher::add_consumer(std::shared_ptr<sample::SampleConsumer> consumer) {
  consumers_.push_back(std::move(consumer));
}

void SamplePublisher::follow_kernel_log(const std::string& path, kernel::KernelLogParsers parsers) {
  kernel_log_ = std::make_unique<kernel::KernelLogFollower>(path, std::move(parsers));
}

void SamplePublisher::follow_work_server_logs(std::string runtime_root, std::string proc_root,
                                              collect::WorkServers servers) {
  work_server_logs_ =
      WorkServerLogs{std::move(runtime_root), std::move(proc_root), std::move(servers)};
}

void SamplePublisher::apply(const PublishSettings& settings) {
  std::lock_guard lock(mutex_);
  settings_ = settings;
}

std::shared_ptr<const sample::Sample> SamplePublisher::latest() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

Clock::time_point SamplePublisher::last_progress() const {
  return Clock::time_point(Clock::duration(progress_.load()));
}

void SamplePublisher::note_driver(const engine::Collection& c) {
  const auto& drivers = c.snapshot->drivers;
  bool up = drivers.any_available();
  if (driver_was_up_ && *driver_was_up_ == up) return;
  if (up) {
    std::string version = "unknown";
    for (const auto& b : drivers.backends)
      if (b.available && b.driver_version) version = *b.driver_version;
    if (driver_was_up_)
      base::log_notice("the GPU driver answers again: " + text::plural(drivers.gpus.size(), "GPU"));
    else
      base::log_info("GPU driver: " + text::plural(drivers.gpus.size(), "GPU") + ", driver " +
                     version);
  } else {
    const auto* down = drivers.first_down();
    std::string why = down && down->error ? *down->error : "unknown reason";
    if (c.driver_timed_out)
      base::log_error("GPU backend down: " + why);
    else
      base::log_warning("GPU backend unavailable: " + why);
  }
  driver_was_up_ = up;
}

void SamplePublisher::on_failure(const std::string& what) {
  // The sample is skipped and reported; the engine, and what was last published, go on.
  base::log_error("sampling failed: " + what + "; please report this as a gpureap bug");
}

void SamplePublisher::on_collection(const engine::Collection& c) {
  PublishSettings settings;
  {
    std::lock_guard lock(mutex_);
    settings = settings_;
  }
  note_driver(c);

  auto sample = std::make_shared<sample::Sample>();
  sample->sequence = c.sequence;
  sample->driver_timed_out = c.driver_timed_out;
  sample->holder_scan = c.holder_scan;
  sample->full_scan = c.full_scan;
  sample->snapshot = c.snapshot;
  auto before = latest();
  if (before) sample->previous = before->snapshot;
  history_->record(*sample->snapshot);

  std::vector<core::KernelEventCount> kernel_counts;
  if (kernel_log_) {
    auto fresh =
        kernel_log_->poll(sample->snapshot->proc.boot_time, sample->snapshot->drivers.gpus);
    const auto& problem = kernel_log_->log().problem;
    // One copy per change, shared by the samples: the local socket's doctor and ps read it.
    const auto& kills = kernel_log_->log().oom_kills;
    if (!kernel_view_ || !fresh.empty() || kernel_view_->problem != problem ||
        kernel_view_->read != kernel_log_->log().read ||
        (!kills.empty() && (kernel_view_->oom_kills.empty() ||
                            kernel_view_->oom_kills.back().seq != kills.back().seq)))
      kernel_view_ = std::make_shared<const core::KernelLog>(kernel_log_->log());
    sample->kernel_log = kernel_view_;
    // Once per streak: without the log everything else still works.
    if (problem && !kernel_log_problem_told_) base::log_warning(*problem);
    kernel_log_problem_told_ = problem.has_value();
    kernel_counts = kernel_log_->counts();
  }
  doctor::Evidence evidence{sample->previous ? sample->previous : sample->snapshot,
                            sample->snapshot, c.ipc_residue, sample->kernel_log};
  if (work_server_logs_ && doctor::wants_work_server_log(evidence))
    sample->work_server_log = collect::read_work_server_logs(
        work_server_logs_->runtime_root, work_server_logs_->proc_root, *sample->snapshot,
        work_server_logs_->servers);
  evidence.work_server_log = sample->work_server_log;
  // Every view of the sample decides for its reader whether the restricted lines show.
  sample->stalled_job_critical_after = settings.stalled_job_critical_after;
  sample->findings =
      doctor::examine(evidence,
                      {.unattributed = settings.unattributed_threshold,
                       .stalled_job_critical_after = settings.stalled_job_critical_after},
                      reap::is_protected_process);

  exporter::MetricsInput metrics{*sample->snapshot,
                                 sample->findings,
                                 {{"driver", c.driver.seconds, c.driver.errors},
                                  {"holder_scan", c.scan.seconds, c.scan.errors}},
                                 settings.per_process_metrics,
                                 kernel_log_ ? &kernel_counts : nullptr,
                                 kernel_log_ && kernel_log_->log().read};
  auto families = exporter::build_metrics(metrics);
  for (const auto& consumer : consumers_) consumer->add_metrics(families);
  sample->metrics_text = exporter::render(families);
  sample->taken = Clock::now();
  sample->ipc_residue = c.ipc_residue;
  if (anchors_.empty() || sample->taken - anchors_.back().taken >= kSettleSpacing) {
    anchors_.push_back({sample->taken, sample->snapshot});
    if (anchors_.size() > kSettleAnchors) anchors_.erase(anchors_.begin());
  }
  // The sample before first: with an `interval` longer than --settle it is the one to take.
  if (before) sample->earlier.push_back({before->taken, before->snapshot});
  for (auto a = anchors_.rbegin(); a != anchors_.rend(); ++a)
    if (a->snapshot != sample->snapshot && (!before || a->snapshot != before->snapshot))
      sample->earlier.push_back(*a);

  std::shared_ptr<const sample::Sample> published = sample;
  {
    std::lock_guard lock(mutex_);
    latest_ = published;
  }
  for (const auto& consumer : consumers_) consumer->on_sample(*published, *history_);
  progress_ = Clock::now().time_since_epoch().count();
}

}  // namespace gpureap::daemon
