#pragma once
// One sink's delivery thread: a bounded queue, retries with exponential backoff, counters.
// push() never blocks on the sink, so a receiver that is down, slow or hanging never delays
// the sampling engine; it only fills this queue, whose oldest message is dropped when it is full.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "alert/sender.h"
#include "alert/sink.h"

namespace gpureap::alert {

inline constexpr size_t kQueueCapacity = 256;  // messages waiting per sink
inline constexpr std::chrono::hours kMaxRetryDelay{1};

// gpureap_alerts_sent_total{sink, result}: a message delivered (success), one failed attempt
// (failure), a message given up on after its retries, pushed out of a full queue or left
// unsent at shutdown (dropped).
struct SinkCounters {
  std::atomic<uint64_t> success{0}, failure{0}, dropped{0};
};

// The wait before retry number `retry` (1 for the first): retry_backoff, doubling each time,
// at most kMaxRetryDelay.
std::chrono::milliseconds retry_delay(const SinkConfig& sink, unsigned retry);

class SinkWorker {
 public:
  SinkWorker(SinkConfig sink, std::unique_ptr<Sender> sender,
             std::shared_ptr<SinkCounters> counters, size_t capacity = kQueueCapacity);
  ~SinkWorker();  // stop() with a short wait
  SinkWorker(const SinkWorker&) = delete;
  SinkWorker& operator=(const SinkWorker&) = delete;

  void push(Delivery d);
  // Cancels the attempt in progress, abandons retries and queued messages (logged, counted as
  // dropped), and waits up to `wait` for the thread; a thread still inside a send after that
  // ends on its own once the send returns (within the sink's timeout).
  void stop(std::chrono::milliseconds wait);

  const SinkConfig& config() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace gpureap::alert
