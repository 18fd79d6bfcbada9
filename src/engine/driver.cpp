#include "engine/driver.h"

#include <algorithm>

namespace gpureap::engine {

DriverRead Driver::read() const {
  DriverRead r;
  const auto start = std::chrono::steady_clock::now();
  r.reading = backends_ ? backends_->read() : backend::BackendSet().read();
  r.took = std::chrono::steady_clock::now() - start;
  r.timed_out = std::any_of(r.reading.backends.begin(), r.reading.backends.end(),
                            [](const core::BackendStatus& b) {
                              return b.error_code == core::BackendErrorCode::NotAnswering;
                            });
  return r;
}

void Driver::set_timeout(std::chrono::milliseconds timeout) {
  if (backends_) backends_->set_timeout(timeout);
}

void Driver::interrupt() {
  if (backends_) backends_->interrupt();
}

std::optional<std::chrono::steady_clock::duration> Driver::down_for() const {
  return backends_ ? backends_->down_for() : std::nullopt;
}

bool Driver::stuck() const {
  return backends_ && backends_->threads_stuck();
}

}  // namespace gpureap::engine
