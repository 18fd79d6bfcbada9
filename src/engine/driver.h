#pragma once
// The one place the engine reads the GPU drivers: every backend of the collector, each driver
// behind its own watchdog. A read never blocks past its deadline: a wedged driver costs a
// collection its GPU figures, never the loop.
#include <chrono>
#include <memory>
#include <optional>

#include "backend/backend_set.h"
#include "core/gpu.h"

namespace gpureap::engine {

struct DriverRead {
  core::DriverReading reading;
  bool timed_out = false;  // a driver did not answer within its deadline
  std::chrono::steady_clock::duration took{};
};

class Driver {
 public:
  // The collector's backends (shared with what else uses that collector: top's kills verify
  // releases through them); null: no backend, every read says so.
  explicit Driver(std::shared_ptr<backend::BackendSet> backends) : backends_(std::move(backends)) {}

  DriverRead read() const;
  // From any thread: new deadlines take effect from the next read.
  void set_timeout(std::chrono::milliseconds timeout);
  // From any thread: a read waiting for a driver returns at once (the engine is stopping).
  void interrupt();
  // How long the longest-silent driver has not been answering; empty while all answer.
  std::optional<std::chrono::steady_clock::duration> down_for() const;
  // A thread is still blocked in a driver: the program should leave with _exit.
  bool stuck() const;

 private:
  std::shared_ptr<backend::BackendSet> backends_;
};

}  // namespace gpureap::engine
