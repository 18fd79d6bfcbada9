#pragma once
// The GPU backend called off the caller's thread with a timeout: every driver library a
// BackendSet reads (each command, the daemon's sampling engine and its policy actions). A wedged
// driver blocks a library call forever and such a thread cannot be cancelled: the call is
// abandoned (its thread keeps the backend instance alive and exits if the call ever returns),
// the backend is reported down, and a later call starts a fresh worker with a fresh backend
// instance. Stuck workers are bounded; retries back off while the driver does not answer.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backend/gpu_backend.h"
#include "core/gpu.h"

namespace gpureap::backend {

using BackendFactory = std::function<std::shared_ptr<GpuBackend>()>;

struct WatchdogOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(5)};
  // The backend's name and vendor, for the report given while it does not answer.
  std::string backend_name;
  std::string vendor;
  // The vendor's command that shows whether the driver answers (VendorWords::check_driver).
  std::string check_driver;
  // Abandoned calls allowed to stay stuck at once; at the bound, no new call is made until
  // one of them returns (each holds a thread and a library handle).
  unsigned max_stuck = 4;
  // After a timeout, the next attempt waits this long, doubling up to max_backoff.
  std::chrono::milliseconds first_backoff{std::chrono::seconds(1)};
  std::chrono::milliseconds max_backoff{std::chrono::minutes(5)};
};

struct TimedReport {
  core::BackendReport report;
  bool timed_out = false;  // the driver did not answer (now, or a stuck call keeps it down)
  std::chrono::steady_clock::duration took{};
};

class BackendWatchdog {
 public:
  BackendWatchdog(BackendFactory factory, WatchdogOptions options);
  ~BackendWatchdog();  // asks the worker to end; does not wait for a stuck one
  BackendWatchdog(const BackendWatchdog&) = delete;
  BackendWatchdog& operator=(const BackendWatchdog&) = delete;

  // One collect(), waiting at most the timeout. Never blocks longer.
  TimedReport collect();

  void set_timeout(std::chrono::milliseconds timeout);  // from any thread
  // From any thread: a collect() waiting for the driver returns at once (the daemon is
  // stopping), and later ones do not call it.
  void interrupt();
  unsigned stuck() const;  // abandoned calls that have not returned yet
  // From any thread: how long the driver has not been answering (since the first call of the
  // current streak that timed out); empty while it answers.
  std::optional<std::chrono::steady_clock::duration> down_for() const;

  struct Worker;

 private:
  // "dmesg, <the vendor's check>": what a user looks at when the driver does not answer.
  std::string check_driver() const {
    return options_.check_driver.empty() ? "dmesg" : "dmesg, " + options_.check_driver;
  }
  std::string check_driver_and() const {
    return options_.check_driver.empty() ? "dmesg" : "dmesg and " + options_.check_driver;
  }
  using Clock = std::chrono::steady_clock;
  TimedReport down(std::string why, Clock::time_point start) const;
  // Why no call is made now (stopping, backing off, too many stuck); else starts a worker if
  // none is running and returns nothing.
  std::optional<std::string> refusal(Clock::time_point now);
  // The worker's answer within the timeout; nothing when the call is abandoned.
  std::optional<core::BackendReport> call(std::chrono::milliseconds timeout);
  // After an abandoned call: the streak's start, the backoff, and the reason to report.
  std::string give_up(Clock::time_point start, std::chrono::milliseconds timeout);

  BackendFactory factory_;
  WatchdogOptions options_;
  std::shared_ptr<Worker> worker_;
  std::shared_ptr<std::atomic<unsigned>> stuck_;
  std::atomic<std::chrono::milliseconds::rep> timeout_ms_;
  std::atomic<std::chrono::steady_clock::rep> down_since_{0};  // 0: answering
  std::chrono::steady_clock::time_point retry_at_{};
  std::chrono::milliseconds backoff_{0};
  std::string last_down_reason_;
  std::atomic<bool> interrupted_{false};
  std::mutex waiting_mutex_;
  std::shared_ptr<Worker> waiting_on_;  // the worker collect() waits for, for interrupt()
};

// A backend whose every collect() runs under a BackendWatchdog: what a BackendSet holds for a
// backend that calls into a driver library (see registry.h).
class GuardedBackend final : public GpuBackend {
 public:
  GuardedBackend(BackendFactory factory, WatchdogOptions options)
      : watchdog_(std::move(factory), std::move(options)) {}
  core::BackendReport collect() override { return watchdog_.collect().report; }
  void set_timeout(std::chrono::milliseconds timeout) { watchdog_.set_timeout(timeout); }
  void interrupt() { watchdog_.interrupt(); }
  std::optional<std::chrono::steady_clock::duration> down_for() const {
    return watchdog_.down_for();
  }
  // A thread is still blocked in the driver: the program should leave with _exit, since exit()
  // would run destructors under it.
  bool threads_stuck() const { return watchdog_.stuck() > 0; }

 private:
  BackendWatchdog watchdog_;
};

}  // namespace gpureap::backend
