#pragma once
// An alert as its receivers see it, in Alertmanager's model: a set of labels that names it,
// annotations that describe it, when it started and, once resolved, when it ended.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpureap::alert {

using Labels = std::map<std::string, std::string>;  // sorted by name, as the payloads want them
using TimePoint = std::chrono::system_clock::time_point;

struct Alert {
  Labels labels;       // alertname, severity, instance, and what the instance is (gpu, code, ...)
  Labels annotations;  // summary, description
  TimePoint starts_at;
  std::optional<TimePoint> ends_at;  // set: resolved
  std::string generator_url;         // where to look (the daemon's API), or empty
  // A one-shot alert (a policy action): it is resolved right after it fired, and that
  // resolution carries no news for a human reader.
  bool event = false;

  bool resolved() const { return ends_at.has_value(); }
};

// One message to the sinks of one rule: the alerts of that rule due now.
struct Notification {
  std::string rule;                // the alertname
  std::vector<std::string> sinks;  // the rule's sinks; empty: every sink
  std::vector<Alert> alerts;

  bool firing() const;  // any alert in it still firing
};

// Prometheus's and Alertmanager's label-set fingerprint: FNV-1a (64 bits) over each label's
// name and value, sorted by name, each followed by the byte 0xff; 16 lowercase hex digits.
std::string fingerprint(const Labels& labels);

}  // namespace gpureap::alert
