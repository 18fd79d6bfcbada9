#include "engine/engine.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/scheduled_collector.h"

namespace gpureap::engine {

// Shared with the thread, so a thread left behind in a stuck collection never touches what
// the engine's owner has destroyed.
struct Engine::State {
  State(collect::Collector collector, Cadence c) : collecting(std::move(collector)), cadence(c) {}

  ScheduledCollector collecting;  // only the collecting thread touches it
  std::vector<std::shared_ptr<CollectionConsumer>> consumers;
  std::atomic<bool> stopping{false};

  std::mutex mutex;                  // guards everything below
  std::condition_variable wake;      // the thread: a request, new cadence, or stop
  std::condition_variable finished;  // callers: a collection ended, or the thread did
  Cadence cadence;
  bool cadence_changed = false;
  uint64_t requested = 0;  // collections asked for (fresh, wake) so far
  uint64_t served = 0;     // requests made before the last collection began that has ended
  bool running = false;    // the thread exists and has not ended
  bool busy = false;
  Clock::time_point busy_since;
  Published published;

  // One collection, published; on the calling thread.
  void collect_and_publish(const Cadence& c) {
    std::shared_ptr<const Collection> done;
    std::optional<std::string> error;
    try {
      done = collecting.collect(c, [this] { return stopping.load(); });
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!done && !error) return;  // stopping
    {
      std::lock_guard lock(mutex);
      ++published.rounds;
      published.error = error;
      if (done) published.latest = done;
      finished.notify_all();
    }
    for (const auto& consumer : consumers) {
      if (!done) {
        consumer->on_failure(*error);
        continue;
      }
      try {
        consumer->on_collection(*done);
      } catch (const std::exception& e) {
        consumer->on_failure(e.what());  // its own failure; the others still get the collection
      }
    }
  }

  void loop() {
    std::unique_lock lock(mutex);
    auto next_due = Clock::now();  // the first collection at once: short jobs get one too
    for (;;) {
      auto pending = [&] { return stopping || requested > served || cadence_changed; };
      if (cadence.interval.count() > 0)
        wake.wait_until(lock, next_due, pending);
      else
        wake.wait(lock, pending);
      if (stopping) break;
      cadence_changed = false;             // a new interval starts with a collection now
      const uint64_t serving = requested;  // every request so far predates this collection
      const Cadence c = cadence;
      busy = true;
      busy_since = Clock::now();
      const auto began = busy_since;
      lock.unlock();
      collect_and_publish(c);
      lock.lock();
      busy = false;
      served = std::max(served, serving);
      finished.notify_all();
      next_due = next_collection(began, Clock::now(), c.interval);
    }
    running = false;
    finished.notify_all();
  }
};

Engine::Engine(collect::Collector collector, Cadence cadence)
    : state_(std::make_shared<State>(std::move(collector), cadence)) {}

Engine::~Engine() {
  stop(std::chrono::seconds(2));
}

void Engine::set_scan_hints(std::shared_ptr<ScanHints> hints) {
  state_->collecting.set_hints(std::move(hints));
}

void Engine::carry_sightings(std::optional<core::CarriedSightings> previous) {
  state_->collecting.carry_sightings(std::move(previous));
}

const procfs::ProcFs& Engine::procfs() const {
  return state_->collecting.procfs();
}

void Engine::add_consumer(std::shared_ptr<CollectionConsumer> consumer) {
  state_->consumers.push_back(std::move(consumer));
}

void Engine::start() {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->running) return;
    state_->running = true;
    state_->stopping = false;
  }
  thread_ = std::thread([s = state_] {
    // Named, so `top -H` (and the footprint benchmark) can tell collecting from the rest; the
    // holder scan's helpers inherit the name.
    ::pthread_setname_np(::pthread_self(), "gpureap-sample");
    s->loop();
  });
}

void Engine::collect_once() {
  Cadence c;
  {
    std::lock_guard lock(state_->mutex);
    c = state_->cadence;
  }
  state_->collect_and_publish(c);
}

bool Engine::stop(std::optional<std::chrono::milliseconds> wait) {
  state_->stopping = true;
  state_->collecting.driver().interrupt();
  if (!thread_.joinable()) {  // never started, or already left behind
    std::lock_guard lock(state_->mutex);
    return !state_->running;
  }
  bool ended;
  {
    std::unique_lock lock(state_->mutex);
    state_->wake.notify_all();
    auto done = [&] { return !state_->running; };
    if (wait)
      ended = state_->finished.wait_for(lock, *wait, done);
    else
      state_->finished.wait(lock, done), ended = true;
  }
  if (ended)
    thread_.join();  // so what the thread used is destroyed here, not under exit()
  else
    thread_.detach();
  return ended;
}

void Engine::apply(const Cadence& cadence) {
  std::lock_guard lock(state_->mutex);
  if (cadence.interval != state_->cadence.interval) state_->cadence_changed = true;
  state_->cadence = cadence;
  state_->wake.notify_all();
}

void Engine::wake() {
  std::lock_guard lock(state_->mutex);
  ++state_->requested;
  state_->wake.notify_all();
}

std::shared_ptr<const Collection> Engine::fresh(std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mutex);
  if (!state_->running || state_->stopping) return nullptr;
  const uint64_t mine = ++state_->requested;
  state_->wake.notify_all();
  bool served = state_->finished.wait_for(lock, timeout, [&] {
    return state_->served >= mine || !state_->running;
  }) && state_->served >= mine;
  return served ? state_->published.latest : nullptr;
}

std::shared_ptr<const Collection> Engine::newer_than(uint64_t sequence,
                                                     std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mutex);
  auto newer = [&] {
    return state_->published.latest && state_->published.latest->sequence > sequence;
  };
  if (!state_->finished.wait_for(lock, timeout, newer)) return nullptr;
  return state_->published.latest;
}

std::shared_ptr<const Collection> Engine::latest() const {
  std::lock_guard lock(state_->mutex);
  return state_->published.latest;
}

Published Engine::published() const {
  std::lock_guard lock(state_->mutex);
  return state_->published;
}

std::optional<Clock::duration> Engine::busy_for() const {
  std::lock_guard lock(state_->mutex);
  if (!state_->busy) return std::nullopt;
  return Clock::now() - state_->busy_since;
}

const Driver& Engine::driver() const {
  return state_->collecting.driver();
}

}  // namespace gpureap::engine
