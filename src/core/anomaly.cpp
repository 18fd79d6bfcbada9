#include "core/anomaly.h"

#include "text/enum_names.h"

namespace gpureap::core {

std::string_view to_string(Anomaly a) {
  switch (a) {
    case Anomaly::Stopped:
      return "stopped";
    case Anomaly::Uninterruptible:
      return "uninterruptible";
    case Anomaly::Orphan:
      return "orphan";
    case Anomaly::ZombieChildren:
      return "zombie-children";
    case Anomaly::NoSuchProcess:
      return "no-such-process";
    case Anomaly::ForeignNamespace:
      return "foreign-namespace";
    case Anomaly::InheritedHolder:
      return "inherited-holder";
    case Anomaly::Leaked:
      return "leaked";
    case Anomaly::StalledJob:
      return "stalled-job";
  }
  return {};  // no enumerator: no name
}

std::optional<Anomaly> anomaly_from_string(std::string_view s) {
  return text::enum_from_name<Anomaly>(s);
}

bool is_ghost(Anomaly a) {
  return a == Anomaly::NoSuchProcess || a == Anomaly::InheritedHolder || a == Anomaly::Leaked;
}

}  // namespace gpureap::core
