#include "daemon/sampler.h"

#include <pthread.h>
#include <unistd.h>

#include "base/hostname.h"
#include "base/log.h"
#include "doctor/diagnose.h"
#include "export/metrics.h"
#include "reap/safety.h"
#include "text/plural.h"

namespace gpureap::daemon {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

Sampler::Sampler(collect::Collector collector, std::string dev_root, SamplerSettings settings,
                 std::shared_ptr<history::History> history)
    : collector_(std::move(collector)),
      dev_root_(std::move(dev_root)),
      history_(std::move(history)),
      settings_(settings) {}

Sampler::~Sampler() {
  stop();
}

void Sampler::add_consumer(std::shared_ptr<engine::SampleConsumer> consumer) {
  consumers_.push_back(std::move(consumer));
}

void Sampler::apply(const SamplerSettings& settings) {
  std::lock_guard lock(mutex_);
  settings_ = settings;
  wake_.notify_all();
}

std::shared_ptr<const engine::Sample> Sampler::latest() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

Clock::time_point Sampler::last_progress() const {
  return Clock::time_point(Clock::duration(progress_.load()));
}

void Sampler::note_driver(const core::DriverReading& drivers, bool timed_out) {
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
    if (timed_out)
      base::log_error("GPU backend down: " + why);
    else
      base::log_warning("GPU backend unavailable: " + why);
  }
  driver_was_up_ = up;
}

void Sampler::sample_once() {
  SamplerSettings settings;
  {
    std::lock_guard lock(mutex_);
    settings = settings_;
  }
  if (const auto& drivers = collector_.drivers()) drivers->set_timeout(settings.driver_timeout);

  const auto driver_start = Clock::now();
  core::DriverReading drivers = collector_.read_drivers();
  const bool timed_out = std::any_of(drivers.backends.begin(), drivers.backends.end(),
                                     [](const core::BackendStatus& b) {
                                       return b.error_code == core::BackendErrorCode::NotAnswering;
                                     });
  {
    // Stopping: no holder scan and no sample that nobody will read.
    std::lock_guard lock(mutex_);
    if (stop_) return;
  }
  driver_seconds_ = seconds_since(driver_start);
  if (!drivers.any_available()) ++driver_errors_;
  note_driver(drivers, timed_out);

  const auto now = Clock::now();
  DriverView dv = driver_view(drivers);
  const bool full = !view_ || now >= next_full_scan_ || full_scan_requested_.exchange(false);
  const bool scan = full || now >= next_scan_ || driver_view_moved(view_at_scan_, dv);
  if (scan) {
    auto start = Clock::now();
    view_ = full ? collector_.scan_processes() : collector_.rescan_processes(*view_);
    if (full) next_full_scan_ = now + settings.full_scan_interval;
    // Host-memory residue (doctor's ipc-residue) changes slowly, and when /dev/shm has old
    // files finding it reads every process's fds and memory maps: on full scans, at most
    // every kIpcResidueEvery.
    if (full && now >= next_ipc_check_) {
      std::vector<pid_t> live;
      live.reserve(view_->processes.size());
      for (const auto& p : view_->processes) live.push_back(p.stat.pid);
      ipc_ = procfs::find_ipc_residue(collector_.procfs(), dev_root_, live);
      next_ipc_check_ = now + kIpcResidueEvery;
    }
    hostname_ = base::host_name();
    scan_seconds_ = seconds_since(start);
    if (view_->uninspectable > 0 || !view_->details_complete) ++scan_errors_;
    view_at_scan_ = dv;
    next_scan_ = now + settings.holder_scan_interval;
  }
  collector_.add_driver_details(*view_, drivers);

  auto sample = std::make_shared<engine::Sample>();
  sample->sequence = ++sequence_;
  sample->driver_timed_out = timed_out;
  sample->holder_scan = scan;
  sample->full_scan = scan && full;
  sample->snapshot = std::make_shared<const core::Snapshot>(
      core::join(*view_, std::move(drivers), hostname_, std::chrono::system_clock::now()));
  if (auto before = latest()) sample->previous = before->snapshot;
  history_->record(*sample->snapshot);

  doctor::DoctorInput input{sample->previous ? *sample->previous : *sample->snapshot,
                            *sample->snapshot,
                            ipc_,
                            std::nullopt,
                            reap::is_protected_process,
                            settings.unattributed_threshold};
  sample->findings = doctor::diagnose(input);

  exporter::MetricsInput metrics{
      *sample->snapshot,
      sample->findings,
      {{"driver", driver_seconds_, driver_errors_}, {"holder_scan", scan_seconds_, scan_errors_}},
      settings.per_process_metrics};
  auto families = exporter::build_metrics(metrics);
  for (const auto& c : consumers_) c->add_metrics(families);
  sample->metrics_text = exporter::render(families);
  sample->taken = Clock::now();

  std::shared_ptr<const engine::Sample> published = sample;
  {
    std::lock_guard lock(mutex_);
    latest_ = published;
  }
  for (const auto& c : consumers_) c->on_sample(*published, *history_);
  progress_ = Clock::now().time_since_epoch().count();
}

void Sampler::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = false;
  }
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "gpureap-sample");  // its holder-scan helpers inherit it
    loop();
  });
}

void Sampler::stop() {
  // A sample waiting for a slow driver ends now, not at driver_timeout.
  if (const auto& drivers = collector_.drivers()) drivers->interrupt();
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Sampler::loop() {
  for (;;) {
    const auto started = Clock::now();
    try {
      sample_once();
    } catch (const std::exception& e) {
      // A sample that fails is skipped and reported; the loop, and what it last published, go on.
      base::log_error(std::string("sampling failed: ") + e.what() +
                      "; please report this as a gpureap bug");
    }
    std::unique_lock lock(mutex_);
    const auto planned = settings_.interval;
    // Paced from the start of a sample; one that overran is followed at once, never by a burst.
    wake_.wait_until(lock, started + planned,
                     [&] { return stop_ || settings_.interval != planned; });
    if (stop_) return;
  }
}

}  // namespace gpureap::daemon
