#include "tui/deadline_backend.h"

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace gpureap::tui {

// One worker thread makes every call on the wrapped backend (NVML sees a single thread). It is
// joined on destruction, so the backend is destroyed on the owner's thread and never while
// the program exits; only a worker stuck in a call is left behind (detached).
struct DeadlineBackend::State {
  std::mutex mutex;
  std::condition_variable wake, done;
  std::shared_ptr<backend::GpuBackend> inner;
  bool request = false, in_flight = false, stop = false;
  uint64_t started = 0, finished = 0;  // calls started / returned
  std::chrono::steady_clock::time_point started_at;
  core::BackendReport last;
  std::thread worker;
};

namespace {

void work(const std::shared_ptr<DeadlineBackend::State>& s);

}  // namespace

DeadlineBackend::DeadlineBackend(std::shared_ptr<backend::GpuBackend> inner,
                                 std::chrono::milliseconds deadline)
    : state_(std::make_shared<State>()), deadline_(deadline) {
  state_->inner = std::move(inner);
  state_->worker = std::thread([s = state_] { work(s); });
}

DeadlineBackend::~DeadlineBackend() {
  bool stuck;
  {
    std::unique_lock lock(state_->mutex);
    state_->stop = true;
    state_->wake.notify_all();
    // A call about to return is waited for; one past its deadline is not.
    state_->done.wait_until(lock, state_->started_at + deadline_,
                            [&] { return !state_->in_flight; });
    stuck = state_->in_flight;
  }
  if (stuck)
    state_->worker.detach();  // keeps the state (and the backend) alive; never returns
  else
    state_->worker.join();
}

namespace {

void work(const std::shared_ptr<DeadlineBackend::State>& s) {
  for (;;) {
    {
      std::unique_lock lock(s->mutex);
      s->wake.wait(lock, [&] { return s->request || s->stop; });
      if (s->stop && !s->request) return;
      s->request = false;
    }
    core::BackendReport r;
    try {
      r = s->inner->collect();
    } catch (const std::exception& e) {
      r.available = false;
      r.error = std::string("the GPU backend failed: ") + e.what();
      r.error_code = "internal";
    }
    std::lock_guard lock(s->mutex);
    s->last = std::move(r);
    s->in_flight = false;
    ++s->finished;
    s->done.notify_all();
  }
}

}  // namespace

core::BackendReport not_answering_report(std::chrono::steady_clock::duration blocked) {
  core::BackendReport r;
  r.available = false;
  r.error_code = "not-answering";
  r.error = fmt::format(
      "the GPU driver has not answered for {} s: an NVML call is blocked (a wedged driver?); GPU "
      "figures are "
      "unknown until it returns",
      std::chrono::duration_cast<std::chrono::seconds>(blocked).count());
  return r;
}

core::BackendReport DeadlineBackend::collect() {
  std::unique_lock lock(state_->mutex);
  if (!state_->in_flight) {
    state_->in_flight = true;
    state_->request = true;
    state_->started_at = std::chrono::steady_clock::now();
    ++state_->started;
    state_->wake.notify_all();
  }
  // A call in flight (maybe asked for by another caller) is shared, never duplicated.
  uint64_t want = state_->started;
  if (state_->done.wait_until(lock, state_->started_at + deadline_,
                              [&] { return state_->finished >= want; }))
    return state_->last;
  return not_answering_report(std::chrono::steady_clock::now() - state_->started_at);
}

bool DeadlineBackend::in_flight() const {
  std::lock_guard lock(state_->mutex);
  return state_->in_flight;
}

std::optional<std::chrono::steady_clock::duration> DeadlineBackend::stuck_for() const {
  std::lock_guard lock(state_->mutex);
  if (!state_->in_flight) return std::nullopt;
  auto running = std::chrono::steady_clock::now() - state_->started_at;
  if (running < deadline_) return std::nullopt;
  return running;
}

}  // namespace gpureap::tui
