#include "policy/status_json.h"

#include "core/duration.h"
#include "text/escape.h"
#include "text/time_format.h"

namespace gpureap::policy {
namespace {

using Phase = policy::Tracker::Phase;
using nlohmann::json;

const char* state_name(Phase p) {
  switch (p) {
    case Phase::Waiting:
      return "waiting";
    case Phase::Running:
      return "acting";
    case Phase::Backoff:
      return "retry-wait";
    case Phase::Done:
      return "done";
    case Phase::GaveUp:
      return "gave-up";
  }
  return "";  // no enumerator: no name
}

double seconds_between(std::chrono::system_clock::time_point from,
                       std::chrono::system_clock::time_point to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

}  // namespace

json policies_to_json(const policy::PolicyRunner::Status& status,
                      std::chrono::system_clock::time_point now) {
  json policies = json::array();
  for (const auto& p : status.policies) {
    json processes = json::array();
    for (const auto& item : status.tracked) {
      if (item.policy != p.name) continue;
      json entry{
          {"pid", item.identity.pid},
          {"start_ticks", item.identity.start_ticks ? json(*item.identity.start_ticks) : json()},
          {"state", state_name(item.phase)},
          {"matching_since", text::iso8601_utc(item.since)},
          {"attempts", item.attempts}};
      if (item.phase == Phase::Waiting)
        entry["acts_in_seconds"] = seconds_between(now, item.since + p.after);
      if (item.phase == Phase::Backoff) entry["next_attempt"] = text::iso8601_utc(item.next_try);
      processes.push_back(std::move(entry));
    }
    auto matching = status.matching.find(p.name);
    policies.push_back({{"name", text::utf8_valid(p.name)},
                        {"line", p.line},
                        {"action", policy::to_string(p.action)},
                        {"after_seconds", core::seconds(p.after)},
                        {"matching", matching == status.matching.end() ? 0 : matching->second},
                        {"processes", std::move(processes)}});
  }
  return {{"schema", "gpureap.policies/v1"},
          {"enforce", status.enforce},
          {"queued", status.queued},
          {"policies", std::move(policies)}};
}

}  // namespace gpureap::policy
