#pragma once
// The one place the engine reads the GPU driver. A read never blocks past its deadline: a
// wedged driver costs a collection its GPU figures, never the loop.
#include <chrono>
#include <memory>
#include <optional>

#include "backend/gpu_backend.h"
#include "backend/watchdog.h"

namespace gpureap::engine {

class Driver {
 public:
  virtual ~Driver() = default;
  virtual backend::TimedReport read() = 0;
  // From any thread: new deadlines take effect from the next read.
  virtual void set_timeout(std::chrono::milliseconds timeout) = 0;
  // From any thread: a read waiting for the driver returns at once (the engine is stopping).
  virtual void interrupt() = 0;
  // How long the driver has not been answering; empty while it answers.
  virtual std::optional<std::chrono::steady_clock::duration> down_for() const = 0;
  // A thread is still blocked in the driver: the program should leave with _exit.
  virtual bool stuck() const = 0;
};

// The driver behind a backend watchdog of the engine's own (the daemon): it knows when a
// read timed out and can be interrupted.
class WatchedDriver final : public Driver {
 public:
  WatchedDriver(backend::BackendFactory factory, backend::WatchdogOptions options)
      : watchdog_(std::move(factory), options) {}
  backend::TimedReport read() override { return watchdog_.collect(); }
  void set_timeout(std::chrono::milliseconds timeout) override { watchdog_.set_timeout(timeout); }
  void interrupt() override { watchdog_.interrupt(); }
  std::optional<std::chrono::steady_clock::duration> down_for() const override {
    return watchdog_.down_for();
  }
  bool stuck() const override { return watchdog_.stuck() > 0; }

 private:
  backend::BackendWatchdog watchdog_;
};

// A collector's own backend, shared with what else uses that collector (top's kills verify
// releases through it): the command-line views, whose backend is a WatchdogBackend already.
// Its deadline is the backend's, which reports a driver that did not answer itself.
class BackendDriver final : public Driver {
 public:
  explicit BackendDriver(std::shared_ptr<backend::GpuBackend> backend);
  backend::TimedReport read() override;
  void set_timeout(std::chrono::milliseconds timeout) override;
  void interrupt() override {}
  std::optional<std::chrono::steady_clock::duration> down_for() const override;
  bool stuck() const override;

 private:
  std::shared_ptr<backend::GpuBackend> backend_;
  backend::WatchdogBackend* watched_;  // backend_ when it is one, else null
};

}  // namespace gpureap::engine
