#include "alert/sink_worker.h"

#include <pthread.h>

#include <condition_variable>
#include <deque>
#include <mutex>

#include "base/log.h"
#include "core/duration.h"
#include "text/plural.h"

namespace gpureap::alert {
namespace {

using std::chrono::milliseconds;

std::string what(const Delivery& d) {
  return text::plural(d.alerts, d.status + " alert") + " of " + d.alertname;
}

}  // namespace

milliseconds retry_delay(const SinkConfig& sink, unsigned retry) {
  milliseconds d = sink.retry_backoff;
  for (unsigned i = 1; i < retry && d < kMaxRetryDelay; ++i) d *= 2;
  return std::min<milliseconds>(d, kMaxRetryDelay);
}

struct SinkWorker::State {
  SinkConfig sink;
  std::unique_ptr<Sender> sender;
  std::shared_ptr<SinkCounters> counters;
  size_t capacity;

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Delivery> queue;
  bool stopping = false;
  bool finished = false;
  std::condition_variable done;
  std::thread thread;

  std::string name() const {
    return "alert sink \"" + sink.name + "\" (" + std::string(to_string(sink.type)) + ", " +
           sender->target() + ")";
  }

  // Waits for the backoff; false when stopping.
  bool wait(milliseconds d) {
    std::unique_lock lock(mutex);
    return !wake.wait_for(lock, d, [&] { return stopping; });
  }

  bool stopped() {
    std::lock_guard lock(mutex);
    return stopping;
  }

  void deliver(const Delivery& d) {
    const unsigned attempts = sink.retries + 1;
    for (unsigned attempt = 1;; ++attempt) {
      Attempt a = sender->send(d);
      if (a.ok) {
        ++counters->success;
        base::log_debug(name() + ": sent " + what(d) +
                        (a.output.empty() ? "" : "; it answered: " + a.output));
        return;
      }
      ++counters->failure;
      if (stopped()) {
        ++counters->dropped;
        return;
      }
      if (attempt == attempts) {
        ++counters->dropped;
        base::log_error(name() + ": gave up on " + what(d) + " after " +
                        text::plural(attempts, "attempt") + ": " + a.error);
        return;
      }
      milliseconds delay = retry_delay(sink, attempt);
      base::log_warning(name() + ": attempt " + std::to_string(attempt) + " of " +
                        std::to_string(attempts) + " to send " + what(d) + " failed: " + a.error +
                        "; retrying in " + core::format_duration(delay));
      if (!wait(delay)) {
        ++counters->dropped;
        return;
      }
    }
  }

  void run() {
    for (;;) {
      Delivery d;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stopping || !queue.empty(); });
        if (stopping) break;
        d = std::move(queue.front());
        queue.pop_front();
      }
      deliver(d);
    }
    std::lock_guard lock(mutex);
    if (!queue.empty()) {
      counters->dropped += queue.size();
      base::log_warning(name() + ": " + text::plural(queue.size(), "message") +
                        " not sent: the daemon is stopping or the sink was reconfigured");
      queue.clear();
    }
    finished = true;
    done.notify_all();
  }
};

SinkWorker::SinkWorker(SinkConfig sink, std::unique_ptr<Sender> sender,
                       std::shared_ptr<SinkCounters> counters, size_t capacity)
    : state_(std::make_shared<State>()) {
  state_->sink = std::move(sink);
  state_->sender = std::move(sender);
  state_->counters = std::move(counters);
  state_->capacity = std::max<size_t>(1, capacity);
  // The thread owns a reference: if it outlives a bounded stop, what it uses stays valid.
  state_->thread = std::thread([s = state_] {
    ::pthread_setname_np(::pthread_self(), "gpureap-alert");
    s->run();
  });
}

SinkWorker::~SinkWorker() {
  stop(milliseconds(200));
}

const SinkConfig& SinkWorker::config() const {
  return state_->sink;
}

void SinkWorker::push(Delivery d) {
  std::lock_guard lock(state_->mutex);
  if (state_->stopping) return;
  if (state_->queue.size() >= state_->capacity) {
    const Delivery& oldest = state_->queue.front();
    ++state_->counters->dropped;
    base::log_warning(state_->name() + ": " + std::to_string(state_->capacity) +
                      " messages are waiting; dropped the oldest, " + what(oldest) +
                      ": the sink is down or slower than alerts come");
    state_->queue.pop_front();
  }
  state_->queue.push_back(std::move(d));
  state_->wake.notify_all();
}

void SinkWorker::stop(milliseconds wait) {
  if (!state_->thread.joinable()) return;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    state_->wake.notify_all();
  }
  state_->sender->cancel();
  std::unique_lock lock(state_->mutex);
  bool finished = state_->done.wait_for(lock, wait, [&] { return state_->finished; });
  lock.unlock();
  if (finished)
    state_->thread.join();
  else
    state_->thread.detach();
}

}  // namespace gpureap::alert
