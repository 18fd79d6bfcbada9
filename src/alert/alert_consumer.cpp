#include "alert/alert_consumer.h"

#include "base/log.h"
#include "metric/names.h"

namespace gpureap::alert {

AlertConsumer::AlertConsumer(Dispatcher::SenderFactory factory, size_t queue_capacity)
    : dispatcher_(std::move(factory), queue_capacity) {}

AlertConsumer::~AlertConsumer() {
  stop();
}

void AlertConsumer::send(const std::vector<Notification>& notifications) {
  for (const auto& n : notifications) {
    for (const auto& a : n.alerts) {
      auto summary = a.annotations.find("summary");
      base::log_info("alert " + n.rule + (a.resolved() ? " resolved" : " firing") +
                     (summary == a.annotations.end() ? "" : ": " + summary->second));
    }
    dispatcher_.dispatch(n, context_.external_url);
  }
}

void AlertConsumer::apply(std::vector<Rule> rules, std::vector<SinkConfig> sinks,
                          std::string hostname, std::string external_url) {
  // Sinks first: what the rule changes resolve goes to the sinks of the new configuration.
  dispatcher_.apply(std::move(sinks));
  std::lock_guard lock(mutex_);
  EvaluatorContext context{std::move(hostname), std::move(external_url)};
  auto resolved = evaluator_.set_rules(std::move(rules), context, std::chrono::system_clock::now());
  context_ = std::move(context);
  send(resolved);
}

void AlertConsumer::on_sample(const sample::Sample& sample, const history::History&) {
  std::lock_guard lock(mutex_);
  send(evaluator_.evaluate(sample));
  dispatcher_.resend_firing(sample.taken);
}

void AlertConsumer::on_policy_record(const audit::Record& record) {
  std::lock_guard lock(mutex_);
  send(evaluator_.on_policy_record(record, std::chrono::steady_clock::now()));
}

void AlertConsumer::add_metrics(std::vector<exporter::MetricFamily>& out) const {
  out.push_back(dispatcher_.sent_metric());
  exporter::MetricFamily firing{metric::kAlertsFiring,
                                "Alerts firing now per [[alert]] rule (policy actions count until "
                                "they are resolved at the next sample)"};
  std::lock_guard lock(mutex_);
  for (const auto& [name, n] : evaluator_.firing())
    firing.add({{"alertname", name}}, static_cast<double>(n));
  out.push_back(std::move(firing));
}

void AlertConsumer::stop(std::chrono::milliseconds wait) {
  dispatcher_.stop(wait);
}

}  // namespace gpureap::alert
