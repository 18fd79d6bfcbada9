#include "policy/policy.h"

#include "text/enum_names.h"

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
  return "";  // no enumerator: no name
}

std::optional<Action> action_from_string(std::string_view s) {
  return text::enum_from_name<Action>(s);
}

}  // namespace gpureap::policy
