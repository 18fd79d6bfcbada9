#include "tui/sampler.h"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace gpureap::tui {

struct Sampler::State {
  std::shared_ptr<const collect::Collector> collector;
  std::string proc_root;
  std::chrono::milliseconds interval;
  mutable std::mutex mutex;
  std::condition_variable cv;
  bool stop = false;
  bool wake = false;
  bool busy = false;
  bool exited = false;
  std::chrono::steady_clock::time_point busy_since;
  Sample latest;
  std::thread thread;
};

Sampler::Sampler(std::shared_ptr<const collect::Collector> collector, std::string proc_root,
                 std::chrono::milliseconds interval)
    : state_(std::make_shared<State>()) {
  state_->collector = std::move(collector);
  state_->proc_root = std::move(proc_root);
  state_->interval = interval;
}

Sampler::~Sampler() {
  stop();
}

void Sampler::start() {
  state_->thread = std::thread([s = state_] { loop(s); });
}

void Sampler::loop(const std::shared_ptr<State>& s) {
  for (;;) {
    {
      std::lock_guard lock(s->mutex);
      if (s->stop) break;
      s->busy = true;
      s->busy_since = std::chrono::steady_clock::now();
    }
    auto started = std::chrono::steady_clock::now();
    std::shared_ptr<const core::Snapshot> snapshot;
    HostStats host;
    std::optional<std::string> error;
    try {
      snapshot = std::make_shared<const core::Snapshot>(s->collector->collect());
      host = read_host_stats(s->proc_root);
    } catch (const std::exception& e) {
      // Never escapes the thread (that would end the program with the terminal unrestored).
      error = std::string("sampling failed: ") + e.what();
    }
    std::unique_lock lock(s->mutex);
    s->busy = false;
    if (snapshot) {
      s->latest = {std::move(snapshot),
                   host,
                   s->latest.generation + 1,
                   std::chrono::steady_clock::now(),
                   {}};
    } else {
      s->latest.error = std::move(error);
      ++s->latest.generation;
    }
    s->cv.notify_all();
    // The next sample is due one interval after this one began, not after it ended.
    s->cv.wait_until(lock, started + s->interval, [&] { return s->stop || s->wake; });
    s->wake = false;
    if (s->stop) break;
  }
  std::lock_guard lock(s->mutex);
  s->exited = true;
  s->cv.notify_all();
}

Sample Sampler::latest() const {
  std::lock_guard lock(state_->mutex);
  return state_->latest;
}

std::optional<std::chrono::steady_clock::duration> Sampler::busy_for() const {
  std::lock_guard lock(state_->mutex);
  if (!state_->busy) return std::nullopt;
  return std::chrono::steady_clock::now() - state_->busy_since;
}

void Sampler::wake() {
  std::lock_guard lock(state_->mutex);
  state_->wake = true;
  state_->cv.notify_all();
}

bool Sampler::stop(std::chrono::milliseconds wait) {
  if (!state_->thread.joinable()) return true;
  bool exited;
  {
    std::unique_lock lock(state_->mutex);
    state_->stop = true;
    state_->cv.notify_all();
    exited = state_->cv.wait_for(lock, wait, [&] { return state_->exited; });
  }
  if (exited) {
    state_->thread.join();
    return true;
  }
  state_->thread.detach();  // stuck in a collection: it keeps its state alive and is left behind
  return false;
}

}  // namespace gpureap::tui
