#pragma once
// The alerting state machine. Pure: time comes in with the samples and records.
//
// For each rule and instance (a GPU for the memory rules, a finding code on a set of GPUs for
// finding rules) an alert is pending from the first sample where its condition holds; it fires
// once it has held for the rule's `for`, is sent again every `repeat_interval` while it fires,
// and is sent resolved (with endsAt) at the first sample where the condition no longer holds or
// the instance is gone (a GPU that left the backend's list, a finding doctor no longer makes).
// A value that is unknown (a GPU that errs, process lists that failed validation, a backend
// that is down) never starts or advances an alert and never resolves one: a pending alert
// starts over, a firing one stays firing until its value is known again.
//
// Policy actions are events, not states: each record a PolicyAction rule takes fires one alert
// at once, and that alert is resolved at the next sample, so receivers that track open alerts
// (ticketing, Alertmanager itself) do not keep it open forever.
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "alert/alert.h"
#include "alert/rule.h"
#include "audit/record.h"
#include "sample/sample.h"

namespace gpureap::alert {

using SteadyTime = std::chrono::steady_clock::time_point;

struct EvaluatorContext {
  std::string hostname;      // the instance label
  std::string external_url;  // the daemon's URL, "http://host:9842/"; generatorURL builds on it
  bool operator==(const EvaluatorContext&) const = default;
};

class Evaluator {
 public:
  // New rules (a reload). A rule that keeps its name, condition and severity keeps its
  // pending and firing alerts; the firing alerts of the others are returned resolved at `now`.
  std::vector<Notification> set_rules(std::vector<Rule> rules, EvaluatorContext context,
                                      TimePoint now);

  // One sample: its `taken` is the time for `for` and `repeat_interval`, its snapshot's
  // timestamp the wall-clock time of startsAt and endsAt.
  std::vector<Notification> evaluate(const sample::Sample& sample);

  // One policy decision or action: an alert for each PolicyAction rule that takes it.
  std::vector<Notification> on_policy_record(const audit::Record& record, SteadyTime now);

  // Alerts firing per rule, every rule included (0), in the config's order.
  std::vector<std::pair<std::string, size_t>> firing() const;

 private:
  struct Instance {
    Labels labels;  // fixed when it started: the fingerprint never changes under a receiver
    Labels annotations;
    std::string generator_url;
    SteadyTime pending_since;
    TimePoint active_since;  // startsAt
    bool firing = false;
    SteadyTime last_sent;
  };
  struct Event {
    Alert alert;
    SteadyTime fired;
  };
  struct RuleState {
    Rule rule;
    std::map<std::string, Instance> instances;
    std::vector<Event> events;  // fired, resolved at the next sample
  };

  void evaluate_rule(RuleState& rs, const sample::Sample& sample, Notification& out);
  Alert alert_of(const Instance& in) const;
  std::string url(const std::string& path) const;

  std::vector<RuleState> rules_;
  EvaluatorContext context_;
};

}  // namespace gpureap::alert
