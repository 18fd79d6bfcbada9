#include "backend/watchdog.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/duration.h"

namespace gpureap::backend {

using Clock = std::chrono::steady_clock;

// Shared by the daemon and the worker thread, so an abandoned worker can finish (or stay
// stuck) without touching anything the daemon may have destroyed.
struct BackendWatchdog::Worker {
  std::shared_ptr<GpuBackend> backend;
  std::shared_ptr<std::atomic<unsigned>> stuck;
  std::mutex mutex;
  std::condition_variable cv;
  bool requested = false;
  bool done = false;
  bool abandoned = false;
  bool quit = false;
  bool finished = false;
  core::BackendReport result;
  std::string thread_name = "gpureap-driver";

  // The backend instance goes before the thread ends, so its library's shutdown never races with
  // the process's exit.
  void finish(std::unique_lock<std::mutex>& lock) {
    lock.unlock();
    backend.reset();
    lock.lock();
    finished = true;
    cv.notify_all();
  }

  static void run(std::shared_ptr<Worker> self) {
    // Named, so `top -H` (and the footprint benchmark) can tell the driver's time from ours.
    ::pthread_setname_np(::pthread_self(), self->thread_name.c_str());
    for (;;) {
      {
        std::unique_lock lock(self->mutex);
        self->cv.wait(lock, [&] { return self->requested || self->quit; });
        if (self->quit) return self->finish(lock);
        self->requested = false;
      }
      core::BackendReport report = self->backend->collect();
      std::unique_lock lock(self->mutex);
      if (self->abandoned) {
        // The call came back after the daemon gave up on it: this thread is no longer stuck.
        --*self->stuck;
        return self->finish(lock);
      }
      self->result = std::move(report);
      self->done = true;
      self->cv.notify_all();
    }
  }
};

BackendWatchdog::BackendWatchdog(BackendFactory factory, WatchdogOptions options)
    : factory_(std::move(factory)),
      options_(std::move(options)),
      stuck_(std::make_shared<std::atomic<unsigned>>(0)),
      timeout_ms_(options_.timeout.count()) {}

BackendWatchdog::~BackendWatchdog() {
  if (!worker_) return;
  std::unique_lock lock(worker_->mutex);
  worker_->quit = true;
  worker_->cv.notify_all();
  // A worker in a call that is merely slow gets a moment to finish; a stuck one is left.
  worker_->cv.wait_for(lock, std::chrono::milliseconds(500), [&] { return worker_->finished; });
}

void BackendWatchdog::set_timeout(std::chrono::milliseconds timeout) {
  timeout_ms_ = timeout.count();
}

std::optional<Clock::duration> BackendWatchdog::down_for() const {
  auto since = down_since_.load();
  if (since == 0) return std::nullopt;
  return Clock::now() - Clock::time_point(Clock::duration(since));
}

void BackendWatchdog::interrupt() {
  interrupted_ = true;
  std::lock_guard guard(waiting_mutex_);
  if (!waiting_on_) return;
  // Under the worker's mutex, so the waiter cannot miss it between its check and its wait.
  std::lock_guard lock(waiting_on_->mutex);
  waiting_on_->cv.notify_all();
}

unsigned BackendWatchdog::stuck() const {
  return stuck_->load();
}

TimedReport BackendWatchdog::collect() {
  const auto start = Clock::now();
  const std::chrono::milliseconds timeout(timeout_ms_.load());
  if (auto refused = refusal(start)) return down(std::move(*refused), start);
  if (auto answer = call(timeout)) {
    backoff_ = std::chrono::milliseconds(0);
    down_since_ = 0;
    return {std::move(*answer), false, Clock::now() - start};
  }
  return down(give_up(start, timeout), start);
}

TimedReport BackendWatchdog::down(std::string why, Clock::time_point start) const {
  TimedReport r;
  r.timed_out = true;
  r.report.name = options_.backend_name;
  r.report.vendor = options_.vendor;
  r.report.available = false;
  r.report.error = std::move(why);
  r.report.error_code = core::BackendErrorCode::NotAnswering;
  r.took = Clock::now() - start;
  return r;
}

std::optional<std::string> BackendWatchdog::refusal(Clock::time_point now) {
  if (interrupted_) return "gpureap is stopping";
  if (worker_) return std::nullopt;
  if (now < retry_at_) return last_down_reason_;
  if (stuck_->load() >= options_.max_stuck)
    return std::to_string(stuck_->load()) +
           " calls into the GPU driver have not returned; gpureap makes no new call until one "
           "does: "
           "check the driver (" +
           check_driver() + "), and restart the daemon once it is fixed";
  worker_ = std::make_shared<Worker>();
  // "gpureap-<backend>", within the kernel's 15 characters.
  worker_->thread_name = ("gpureap-" + options_.backend_name).substr(0, 15);
  worker_->backend = factory_();
  worker_->stuck = stuck_;
  std::thread(Worker::run, worker_).detach();
  return std::nullopt;
}

std::optional<core::BackendReport> BackendWatchdog::call(std::chrono::milliseconds timeout) {
  {
    std::lock_guard guard(waiting_mutex_);
    waiting_on_ = worker_;
  }
  std::optional<core::BackendReport> answer;
  std::unique_lock lock(worker_->mutex);
  worker_->done = false;
  worker_->requested = true;
  worker_->cv.notify_all();
  const bool answered = worker_->cv.wait_for(lock, timeout, [&] {
    return worker_->done || interrupted_;
  }) && worker_->done;
  if (answered) {
    answer = std::move(worker_->result);
  } else {
    // Abandon the call. Its thread keeps the backend instance; the next attempt gets new ones.
    // Counted under the lock, before the thread can count its return.
    worker_->abandoned = true;
    ++*stuck_;
  }
  lock.unlock();
  std::lock_guard guard(waiting_mutex_);
  waiting_on_.reset();
  return answer;
}

std::string BackendWatchdog::give_up(Clock::time_point start, std::chrono::milliseconds timeout) {
  Clock::rep unset = 0;
  down_since_.compare_exchange_strong(unset, start.time_since_epoch().count());
  worker_.reset();
  if (interrupted_) return "gpureap is stopping";
  backoff_ =
      backoff_.count() == 0 ? options_.first_backoff : std::min(backoff_ * 2, options_.max_backoff);
  retry_at_ = Clock::now() + backoff_;
  last_down_reason_ = "the GPU driver did not answer within " + core::format_duration(timeout) +
                      " (a wedged driver or a GPU fallen off the bus?); gpureap retries in " +
                      core::format_duration(backoff_) + ": check " + check_driver_and();
  return last_down_reason_;
}

}  // namespace gpureap::backend
