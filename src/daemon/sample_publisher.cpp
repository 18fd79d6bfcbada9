#include "daemon/sample_publisher.h"

#include "daemon/log.h"
#include "doctor/diagnose.h"
#include "export/metrics.h"
#include "reap/safety.h"

namespace gpureap::daemon {

using Clock = std::chrono::steady_clock;

SamplePublisher::SamplePublisher(PublishSettings settings, std::shared_ptr<History> history)
    : history_(std::move(history)), settings_(std::move(settings)) {}

void SamplePublisher::add_consumer(std::shared_ptr<SampleConsumer> consumer) {
  consumers_.push_back(std::move(consumer));
}

void SamplePublisher::apply(const PublishSettings& settings) {
  std::lock_guard lock(mutex_);
  settings_ = settings;
}

std::shared_ptr<const Sample> SamplePublisher::latest() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

Clock::time_point SamplePublisher::last_progress() const {
  return Clock::time_point(Clock::duration(progress_.load()));
}

void SamplePublisher::note_driver(const engine::Collection& c) {
  const auto& report = c.snapshot->backend;
  bool up = report.available;
  if (driver_was_up_ && *driver_was_up_ == up) return;
  if (up) {
    if (driver_was_up_)
      log_notice("the GPU driver answers again: " + count(report.gpus.size(), "GPU"));
    else
      log_info("GPU driver: " + count(report.gpus.size(), "GPU") + ", driver " +
               report.driver_version.value_or("unknown"));
  } else {
    std::string why = report.error.value_or("unknown reason");
    if (c.driver_timed_out)
      log_error("GPU backend down: " + why);
    else
      log_warning("GPU backend unavailable: " + why);
  }
  driver_was_up_ = up;
}

void SamplePublisher::on_failure(const std::string& what) {
  // The sample is skipped and reported; the engine, and what was last published, go on.
  log_error("sampling failed: " + what + "; please report this as a gpureap bug");
}

void SamplePublisher::on_collection(const engine::Collection& c) {
  PublishSettings settings;
  {
    std::lock_guard lock(mutex_);
    settings = settings_;
  }
  note_driver(c);

  auto sample = std::make_shared<Sample>();
  sample->sequence = c.sequence;
  sample->driver_timed_out = c.driver_timed_out;
  sample->holder_scan = c.holder_scan;
  sample->full_scan = c.full_scan;
  sample->snapshot = c.snapshot;
  if (auto before = latest()) sample->previous = before->snapshot;
  history_->record(*sample->snapshot);

  doctor::DoctorInput input{sample->previous ? *sample->previous : *sample->snapshot,
                            *sample->snapshot,
                            c.ipc_residue ? *c.ipc_residue : procfs::IpcResidue{},
                            std::nullopt,
                            [](const core::HostProcess& p) { return reap::is_protected(p); },
                            settings.unattributed_threshold};
  sample->findings = doctor::diagnose(input);

  exporter::MetricsInput metrics{*sample->snapshot,
                                 sample->findings,
                                 {{"driver", c.driver.seconds, c.driver.errors},
                                  {"holder_scan", c.scan.seconds, c.scan.errors}},
                                 settings.per_process_metrics};
  auto families = exporter::build_metrics(metrics);
  for (const auto& consumer : consumers_) consumer->add_metrics(families);
  sample->metrics_text = exporter::render(families);
  sample->taken = Clock::now();

  std::shared_ptr<const Sample> published = sample;
  {
    std::lock_guard lock(mutex_);
    latest_ = published;
  }
  for (const auto& consumer : consumers_) consumer->on_sample(*published, *history_);
  progress_ = Clock::now().time_since_epoch().count();
}

}  // namespace gpureap::daemon
