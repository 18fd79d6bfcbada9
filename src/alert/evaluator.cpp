#include "alert/evaluator.h"

#include <algorithm>
#include <set>

#include "alert/observe.h"
#include "alert/policy_alert.h"

namespace gpureap::alert {
namespace {

Notification notification_for(const Rule& rule) {
  return {rule.name, rule.sinks, {}};
}

void add_if_any(std::vector<Notification>& out, Notification n) {
  if (!n.alerts.empty()) out.push_back(std::move(n));
}

bool same_identity(const Rule& a, const Rule& b) {
  return a.name == b.name && a.condition == b.condition && a.severity == b.severity;
}

}  // namespace

std::string Evaluator::url(const std::string& path) const {
  return context_.external_url.empty() || path.empty() ? "" : context_.external_url + path;
}

Alert Evaluator::alert_of(const Instance& in) const {
  Alert a;
  a.labels = in.labels;
  a.annotations = in.annotations;
  a.starts_at = in.active_since;
  a.generator_url = in.generator_url;
  return a;
}

std::vector<Notification> Evaluator::set_rules(std::vector<Rule> rules, EvaluatorContext context,
                                               TimePoint now) {
  std::vector<Notification> out;
  const bool same_host = context.hostname == context_.hostname;
  std::vector<RuleState> next;
  next.reserve(rules.size());
  for (auto& rule : rules) {
    RuleState rs;
    auto old = std::find_if(rules_.begin(), rules_.end(),
                            [&](const RuleState& o) { return o.rule.name == rule.name; });
    if (old != rules_.end() && same_host && same_identity(old->rule, rule)) {
      rs.instances.swap(old->instances);
      rs.events.swap(old->events);
    }
    rs.rule = std::move(rule);
    next.push_back(std::move(rs));
  }
  // What is left in the old states belongs to rules that are gone or changed what they are.
  for (auto& old : rules_) {
    Notification n = notification_for(old.rule);
    for (auto& [key, in] : old.instances) {
      if (!in.firing) continue;
      Alert a = alert_of(in);
      a.ends_at = std::max(now, a.starts_at);
      n.alerts.push_back(std::move(a));
    }
    for (auto& e : old.events) {
      e.alert.ends_at = std::max(now, e.alert.starts_at);
      n.alerts.push_back(std::move(e.alert));
    }
    add_if_any(out, std::move(n));
  }
  rules_ = std::move(next);
  context_ = std::move(context);
  return out;
}

void Evaluator::evaluate_rule(RuleState& rs, const sample::Sample& sample, Notification& out) {
  const Rule& rule = rs.rule;
  const SteadyTime now = sample.taken;
  const TimePoint wall = sample.snapshot->timestamp;
  Observations obs = observe(rule, sample, context_.hostname);
  if (obs.all_unknown) {
    // Nothing is known: pending alerts cannot show they held, firing ones stay as they are.
    std::erase_if(rs.instances, [](const auto& kv) { return !kv.second.firing; });
    return;
  }
  auto resolve = [&](Instance& in) {
    Alert a = alert_of(in);
    a.ends_at = std::max(wall, a.starts_at);
    out.alerts.push_back(std::move(a));
  };
  std::set<std::string> seen;
  for (auto& o : obs.items) {
    seen.insert(o.key);
    auto it = rs.instances.find(o.key);
    if (o.holds == Holds::Unknown) {
      if (it != rs.instances.end() && !it->second.firing) rs.instances.erase(it);
      continue;
    }
    if (o.holds == Holds::No) {
      if (it == rs.instances.end()) continue;
      if (it->second.firing) {
        it->second.annotations = std::move(o.annotations);  // the values it came back to
        resolve(it->second);
      }
      rs.instances.erase(it);
      continue;
    }
    if (it == rs.instances.end()) {
      Instance in;
      in.labels = std::move(o.labels);
      in.pending_since = now;
      in.active_since = wall;
      it = rs.instances.emplace(o.key, std::move(in)).first;
    }
    Instance& in = it->second;
    in.annotations = std::move(o.annotations);
    in.generator_url = url(o.generator_path);
    const bool due = in.firing ? now - in.last_sent >= rule.repeat_interval
                               : now - in.pending_since >= rule.for_duration;
    if (!due) continue;
    in.firing = true;
    in.last_sent = now;
    out.alerts.push_back(alert_of(in));
  }
  for (auto it = rs.instances.begin(); it != rs.instances.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    if (it->second.firing) resolve(it->second);
    it = rs.instances.erase(it);
  }
}

std::vector<Notification> Evaluator::evaluate(const sample::Sample& sample) {
  std::vector<Notification> out;
  if (!sample.snapshot) return out;
  for (auto& rs : rules_) {
    Notification n = notification_for(rs.rule);
    // Events handed over before this sample was taken end now; later ones at the next.
    for (auto it = rs.events.begin(); it != rs.events.end();) {
      if (it->fired >= sample.taken) {
        ++it;
        continue;
      }
      it->alert.ends_at = std::max(sample.snapshot->timestamp, it->alert.starts_at);
      n.alerts.push_back(std::move(it->alert));
      it = rs.events.erase(it);
    }
    if (rs.rule.condition != Condition::PolicyAction) evaluate_rule(rs, sample, n);
    add_if_any(out, std::move(n));
  }
  return out;
}

std::vector<Notification> Evaluator::on_policy_record(const audit::Record& record, SteadyTime now) {
  std::vector<Notification> out;
  for (auto& rs : rules_) {
    if (!policy_matches(rs.rule, record)) continue;
    Alert a = policy_alert(rs.rule, record, context_.hostname);
    a.generator_url = url("api/v1/snapshot");
    rs.events.push_back({a, now});
    Notification n = notification_for(rs.rule);
    n.alerts.push_back(std::move(a));
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<std::pair<std::string, size_t>> Evaluator::firing() const {
  std::vector<std::pair<std::string, size_t>> out;
  for (const auto& rs : rules_) {
    size_t n = rs.events.size();
    for (const auto& [key, in] : rs.instances) n += in.firing;
    out.emplace_back(rs.rule.name, n);
  }
  return out;
}

}  // namespace gpureap::alert
