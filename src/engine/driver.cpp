#include "engine/driver.h"

namespace gpureap::engine {

BackendDriver::BackendDriver(std::shared_ptr<backend::GpuBackend> backend)
    : backend_(std::move(backend)),
      watched_(dynamic_cast<backend::WatchdogBackend*>(backend_.get())) {}

backend::TimedReport BackendDriver::read() {
  backend::TimedReport r;
  const auto start = std::chrono::steady_clock::now();
  if (backend_)
    r.report = backend_->collect();
  else
    r.report.error = "no GPU backend configured";
  r.took = std::chrono::steady_clock::now() - start;
  // The watchdog is down only after a call it gave up on (or while one stays stuck).
  r.timed_out = !r.report.available && watched_ && watched_->down_for().has_value();
  return r;
}

void BackendDriver::set_timeout(std::chrono::milliseconds timeout) {
  if (watched_) watched_->set_timeout(timeout);
}

std::optional<std::chrono::steady_clock::duration> BackendDriver::down_for() const {
  return watched_ ? watched_->down_for() : std::nullopt;
}

bool BackendDriver::stuck() const {
  return watched_ && watched_->threads_stuck();
}

}  // namespace gpureap::engine
