#pragma once
// Routes notifications to the sinks their rules name, rendered for each sink's type, through
// one SinkWorker per sink. dispatch() renders and queues: it never waits for a sink.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "alert/alert.h"
#include "alert/sink_worker.h"
#include "export/prometheus_text.h"

namespace gpureap::alert {

class Dispatcher {
 public:
  using SenderFactory = std::function<std::unique_ptr<Sender>(const SinkConfig&)>;

  explicit Dispatcher(SenderFactory factory = make_sender, size_t capacity = kQueueCapacity);
  ~Dispatcher();

  // The sinks from now on. A sink whose settings did not change keeps its worker, queue and
  // retries; the others are stopped (briefly waited for) and started anew. Counters stay with
  // the sink's name across reloads.
  void apply(std::vector<SinkConfig> sinks);
  // Renders the notification for each of its sinks (every sink when the rule names none) and
  // queues it. `external_url` is the payloads' externalURL.
  void dispatch(const Notification& n, const std::string& external_url);
  // alertmanager sinks: every alert still firing, posted again once kAlertmanagerResend has
  // passed since the last re-send (called on each sample, so a stalled engine stops vouching
  // for its alerts and Alertmanager lets them end by their endsAt).
  void resend_firing(std::chrono::steady_clock::time_point now);
  // Stops every worker, waiting at most `wait` in all.
  void stop(std::chrono::milliseconds wait);

  // gpureap_alerts_sent_total{sink, result}: every configured sink, every result, 0 included.
  exporter::MetricFamily sent_metric() const;

  struct Counts {
    uint64_t success = 0, failure = 0, dropped = 0;
  };
  std::optional<Counts> counts(const std::string& sink) const;

 private:
  SenderFactory factory_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<SinkWorker>> workers_;
  std::map<std::string, std::shared_ptr<SinkCounters>> counters_;
  // alertmanager sinks by name: what fires there (by fingerprint), kept across reloads.
  struct Firing {
    std::map<std::string, Alert> alerts;
    std::optional<std::chrono::steady_clock::time_point> last_resend;
  };
  std::map<std::string, Firing> firing_;
};

// Two configs that deliver the same way (the line in the file does not matter).
bool same_delivery(const SinkConfig& a, const SinkConfig& b);

}  // namespace gpureap::alert
