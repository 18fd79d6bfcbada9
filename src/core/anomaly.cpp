#include "core/anomaly.h"

#include <array>
#include <utility>

namespace gpureap::core {
namespace {

constexpr std::array<std::pair<Anomaly, std::string_view>, 9> kNames{{
    {Anomaly::Stopped, "stopped"},
    {Anomaly::Uninterruptible, "uninterruptible"},
    {Anomaly::Orphan, "orphan"},
    {Anomaly::ZombieChildren, "zombie-children"},
    {Anomaly::NoSuchProcess, "no-such-process"},
    {Anomaly::ForeignNamespace, "foreign-namespace"},
    {Anomaly::InheritedHolder, "inherited-holder"},
    {Anomaly::Leaked, "leaked"},
    {Anomaly::StalledJob, "stalled-job"},
}};

}  // namespace

std::string_view to_string(Anomaly a) {
  for (const auto& [k, name] : kNames)
    if (k == a) return name;
  return "?";
}

std::optional<Anomaly> anomaly_from_string(std::string_view s) {
  for (const auto& [k, name] : kNames)
    if (name == s) return k;
  return std::nullopt;
}

bool is_ghost(Anomaly a) {
  return a == Anomaly::NoSuchProcess || a == Anomaly::InheritedHolder || a == Anomaly::Leaked;
}

}  // namespace gpureap::core
