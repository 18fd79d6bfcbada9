#include "alert/rule.h"

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

}  // namespace gpureap::alert
