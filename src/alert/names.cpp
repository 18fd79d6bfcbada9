#include "alert/rule.h"
#include "text/enum_names.h"

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
  return "";  // no enumerator: no name
}

std::optional<Condition> condition_from_string(std::string_view s) {
  return text::enum_from_name<Condition>(s);
}

}  // namespace gpureap::alert
