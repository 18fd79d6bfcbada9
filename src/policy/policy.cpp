#include "policy/policy.h"

namespace gpureap::policy {

std::string_view to_string(Action a) {
  switch (a) {
    case Action::Notify:
      return "notify";
    case Action::Terminate:
      return "terminate";
    case Action::Kill:
      return "kill";
  }
  return "?";
}

std::optional<Action> action_from_string(std::string_view s) {
  for (Action a : {Action::Notify, Action::Terminate, Action::Kill})
    if (s == to_string(a)) return a;
  return std::nullopt;
}

}  // namespace gpureap::policy
