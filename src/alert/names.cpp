#include "alert/rule.h"
#include "alert/sink.h"

namespace gpureap::alert {

std::string_view to_string(Condition c) {
  switch (c) {
    case Condition::MemoryRatio:
      return "memory_ratio";
    case Condition::GhostMemory:
      return "ghost_memory";
    case Condition::UnattributedMemory:
      return "unattributed_memory";
    case Condition::Finding:
      return "finding";
    case Condition::PolicyAction:
      return "policy_action";
  }
  return "?";
}

std::optional<Condition> condition_from_string(std::string_view s) {
  for (auto c : {Condition::MemoryRatio, Condition::GhostMemory, Condition::UnattributedMemory,
                 Condition::Finding, Condition::PolicyAction})
    if (s == to_string(c)) return c;
  return std::nullopt;
}

std::string_view to_string(SinkType t) {
  switch (t) {
    case SinkType::Webhook:
      return "webhook";
    case SinkType::Slack:
      return "slack";
    case SinkType::Exec:
      return "exec";
    case SinkType::Alertmanager:
      return "alertmanager";
  }
  return "?";
}

std::optional<SinkType> sink_type_from_string(std::string_view s) {
  for (auto t : {SinkType::Webhook, SinkType::Slack, SinkType::Exec, SinkType::Alertmanager})
    if (s == to_string(t)) return t;
  return std::nullopt;
}

}  // namespace gpureap::alert
