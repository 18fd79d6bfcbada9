#include "alert/dispatcher.h"

#include <algorithm>

#include "alert/alertmanager_payload.h"
#include "alert/sink_kind.h"
#include "metric/names.h"

namespace gpureap::alert {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kReconfigureWait{1000};

bool wants(const Notification& n, const std::string& sink) {
  return n.sinks.empty() || std::find(n.sinks.begin(), n.sinks.end(), sink) != n.sinks.end();
}

void stop_all(std::vector<std::unique_ptr<SinkWorker>>& workers, milliseconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  for (auto& w : workers) {
    auto left = std::chrono::duration_cast<milliseconds>(until - std::chrono::steady_clock::now());
    w->stop(std::max(left, milliseconds(0)));
  }
  workers.clear();
}

}  // namespace

bool same_delivery(const SinkConfig& a, const SinkConfig& b) {
  SinkConfig a_at_b = a;
  a_at_b.line = b.line;  // every field but the line
  return a_at_b == b;
}

Dispatcher::Dispatcher(SenderFactory factory, size_t capacity)
    : factory_(std::move(factory)), capacity_(capacity) {}

Dispatcher::~Dispatcher() {
  stop(kReconfigureWait);
}

void Dispatcher::apply(std::vector<SinkConfig> sinks) {
  std::vector<std::unique_ptr<SinkWorker>> retired;
  {
    std::lock_guard lock(mutex_);
    std::vector<std::unique_ptr<SinkWorker>> next;
    for (auto& sink : sinks) {
      auto same = std::find_if(workers_.begin(), workers_.end(), [&](const auto& w) {
        return w && same_delivery(w->config(), sink);
      });
      if (same != workers_.end()) {
        next.push_back(std::move(*same));
        continue;
      }
      auto& counters = counters_[sink.name];
      if (!counters) counters = std::make_shared<SinkCounters>();
      auto sender = factory_(sink);
      next.push_back(
          std::make_unique<SinkWorker>(std::move(sink), std::move(sender), counters, capacity_));
    }
    for (auto& w : workers_)
      if (w) retired.push_back(std::move(w));
    workers_ = std::move(next);
    std::erase_if(firing_, [&](const auto& kv) {
      return std::none_of(workers_.begin(), workers_.end(), [&](const auto& w) {
        return w->config().name == kv.first && sink_kind(w->config().type).resends_firing;
      });
    });
  }
  // Outside the lock: the engine's thread may dispatch meanwhile.
  stop_all(retired, kReconfigureWait);
}

void Dispatcher::dispatch(const Notification& n, const std::string& external_url) {
  if (n.alerts.empty()) return;
  Delivery d;
  d.alertname = n.rule;
  d.status = n.firing() ? "firing" : "resolved";
  d.alerts = n.alerts.size();
  std::lock_guard lock(mutex_);
  for (auto& w : workers_) {
    if (!wants(n, w->config().name)) continue;
    const auto& kind = sink_kind(w->config().type);
    auto body = kind.body(w->config(), n, external_url);
    if (!body) continue;
    if (kind.resends_firing) {
      auto& firing = firing_[w->config().name].alerts;
      for (const auto& a : n.alerts) {
        if (a.resolved())
          firing.erase(fingerprint(a.labels));
        else
          firing[fingerprint(a.labels)] = a;
      }
    }
    Delivery copy = d;
    copy.body = std::move(*body);
    w->push(std::move(copy));
  }
}

void Dispatcher::resend_firing(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mutex_);
  for (auto& w : workers_) {
    const auto& kind = sink_kind(w->config().type);
    if (!kind.resends_firing) continue;
    auto& f = firing_[w->config().name];
    if (!f.last_resend) f.last_resend = now;  // the first alerts were just sent
    if (now - *f.last_resend < kAlertmanagerResend) continue;
    f.last_resend = now;
    if (f.alerts.empty()) continue;
    Delivery d;
    d.alertname = "every rule (re-sent)";
    d.status = "firing";
    Notification all{d.alertname, {}, {}};
    for (const auto& kv : f.alerts) all.alerts.push_back(kv.second);
    d.alerts = all.alerts.size();
    auto body = kind.body(w->config(), all, "");
    if (!body) continue;
    d.body = std::move(*body);
    w->push(std::move(d));
  }
}

void Dispatcher::stop(milliseconds wait) {
  std::vector<std::unique_ptr<SinkWorker>> workers;
  {
    std::lock_guard lock(mutex_);
    workers.swap(workers_);
  }
  stop_all(workers, wait);
}

exporter::MetricFamily Dispatcher::sent_metric() const {
  exporter::MetricFamily f{
      metric::kAlertsSent,
      "Alert messages by sink and result: success (delivered), failure (one failed attempt; "
      "a message is retried), dropped (given up after its retries, or pushed out of a full queue)",
      exporter::MetricType::Counter};
  std::lock_guard lock(mutex_);
  for (const auto& w : workers_) {
    const auto& name = w->config().name;
    const auto& c = *counters_.at(name);
    f.add({{"sink", name}, {"result", "success"}}, static_cast<double>(c.success.load()));
    f.add({{"sink", name}, {"result", "failure"}}, static_cast<double>(c.failure.load()));
    f.add({{"sink", name}, {"result", "dropped"}}, static_cast<double>(c.dropped.load()));
  }
  return f;
}

std::optional<Dispatcher::Counts> Dispatcher::counts(const std::string& sink) const {
  std::lock_guard lock(mutex_);
  auto it = counters_.find(sink);
  if (it == counters_.end()) return std::nullopt;
  return Counts{it->second->success.load(), it->second->failure.load(), it->second->dropped.load()};
}

}  // namespace gpureap::alert
