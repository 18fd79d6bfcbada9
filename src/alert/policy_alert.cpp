#include "alert/policy_alert.h"

#include <fmt/format.h>

#include "alert/observe.h"
#include "text/byte_format.h"
#include "text/escape.h"
#include "text/time_format.h"

namespace gpureap::alert {

bool policy_matches(const Rule& rule, const audit::Record& record) {
  return rule.condition == Condition::PolicyAction &&
         (!rule.policy || *rule.policy == record.policy);
}

Alert policy_alert(const Rule& rule, const audit::Record& r, const std::string& hostname) {
  Alert a;
  a.event = true;
  a.starts_at = r.time;
  a.labels = base_labels(rule, hostname);
  a.labels["policy"] = r.policy;
  a.labels["action"] = r.action;
  a.labels["outcome"] = r.outcome;
  a.labels["event"] = r.event;
  a.labels["pid"] = std::to_string(r.process.pid);
  // The process's name, argv and container are anyone's to set: one line each, escaped.
  a.labels["comm"] = text::terminal_safe(r.process.comm);
  if (r.process.user)
    a.labels["user"] = *r.process.user;
  else if (r.process.uid)
    a.labels["user"] = std::to_string(*r.process.uid);

  std::vector<unsigned> gpus;
  uint64_t held = 0;
  for (const auto& m : r.memory) {
    gpus.push_back(m.gpu);
    held += m.bytes.value_or(0);
  }
  if (!gpus.empty()) a.labels["gpu"] = fmt::format("{}", fmt::join(gpus, ","));

  std::string who = fmt::format("PID {} ({}{})", r.process.pid, r.process.comm,
                                a.labels.count("user") ? ", user " + a.labels["user"] : "");
  std::string summary = fmt::format("policy {}: {} {}", r.policy, r.action, who);
  if (!gpus.empty()) summary += fmt::format(" on GPU {}", a.labels["gpu"]);
  summary += ": " + r.outcome;
  if (r.released_bytes) summary += fmt::format(" ({} freed)", text::human_bytes(*r.released_bytes));
  if (!r.enforced) summary += " (not enforced)";
  a.annotations["summary"] = text::terminal_safe(summary);

  std::string d = fmt::format("At {} on {}, policy {} ({}) ", text::iso8601_utc(r.time), hostname,
                              r.policy, r.event);
  d += r.enforced ? "acted on " : "would act on (enforce is off) ";
  d += who;
  if (held > 0) d += fmt::format(", which held {}", text::human_bytes(held));
  d += fmt::format(": {} -> {}.", r.action, r.outcome);
  if (!r.reasons.empty()) d += fmt::format(" Matched: {}.", fmt::join(r.reasons, "; "));
  if (!r.process.cmdline.empty())
    d += fmt::format(" Command: {}.", fmt::join(r.process.cmdline, " "));
  if (r.process.container) d += " Container: " + *r.process.container + ".";
  if (!r.detail.empty()) d += " " + r.detail;
  if (r.attempt > 1) d += fmt::format(" (attempt {})", r.attempt);
  a.annotations["description"] = text::terminal_safe(d);
  return a;
}

}  // namespace gpureap::alert
