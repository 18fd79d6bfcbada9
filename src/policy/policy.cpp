#include "policy/policy.h"

#include <tuple>

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

bool same_conditions(const Policy& a, const Policy& b) {
  const auto conditions = [](const Policy& p) {
    return std::tie(p.user, p.uid, p.command, p.container, p.gpu, p.anomalies, p.min_memory, p.idle,
                    p.idle_below, p.runtime);
  };
  return conditions(a) == conditions(b);
}

}  // namespace gpureap::policy
