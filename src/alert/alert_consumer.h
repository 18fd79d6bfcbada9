#pragma once
// Alerting in the daemon: a SampleConsumer that evaluates the [[alert]] rules on every sample
// and hands what is due to the sinks' delivery threads; policy records come in through
// on_policy_record. Nothing here waits for a sink, so sampling goes on whatever they do.
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "alert/dispatcher.h"
#include "alert/evaluator.h"
#include "sample/sample.h"

namespace gpureap::alert {

class AlertConsumer : public sample::SampleConsumer {
 public:
  explicit AlertConsumer(Dispatcher::SenderFactory factory = make_sender,
                         size_t queue_capacity = kQueueCapacity);
  ~AlertConsumer() override;

  // The configuration (at start and on SIGHUP). Rules that keep their name, condition and
  // severity keep their state; firing alerts of the others are sent resolved.
  // `external_url`: the daemon's URL ("http://node1:9842/"), for externalURL and generatorURL.
  void apply(std::vector<Rule> rules, std::vector<SinkConfig> sinks, std::string hostname,
             std::string external_url = "");

  void on_sample(const sample::Sample& sample, const history::History& history) override;
  // gpureap_alerts_sent_total{sink,result} and gpureap_alerts_firing{alertname}.
  void add_metrics(std::vector<exporter::MetricFamily>& out) const override;

  // A final policy decision or action (any thread).
  void on_policy_record(const audit::Record& record);

  // Stops the delivery threads, waiting at most `wait`; alerts after this are not sent.
  void stop(std::chrono::milliseconds wait = std::chrono::seconds(2));

  const Dispatcher& dispatcher() const { return dispatcher_; }

 private:
  void send(const std::vector<Notification>& notifications);

  mutable std::mutex mutex_;  // guards evaluator_ and context_
  Evaluator evaluator_;
  EvaluatorContext context_;
  Dispatcher dispatcher_;
};

}  // namespace gpureap::alert
