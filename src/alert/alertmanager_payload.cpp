#include "alert/alertmanager_payload.h"

#include <algorithm>

#include "alert/payload.h"

namespace gpureap::alert {
namespace {

using nlohmann::json;

bool name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (!first && c >= '0' && c <= '9');
}

json label_set(const Labels& labels) {
  json j = json::object();
  for (const auto& [k, v] : labels) {
    if (v.empty()) continue;  // to Alertmanager an empty label is no label
    auto name = alertmanager_label_name(k);
    // Two names that became the same: the first (in sorted order) keeps its value.
    if (!j.contains(name)) j[name] = v;
  }
  return j;
}

}  // namespace

std::string alertmanager_label_name(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 1);
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) out += '_';
  for (char c : name) out += name_char(c, out.empty()) ? c : '_';
  return out;
}

json alertmanager_payload(const std::vector<Alert>& alerts, TimePoint now,
                          std::chrono::milliseconds validity) {
  json out = json::array();
  for (const auto& a : alerts) {
    TimePoint ends = a.ends_at ? std::max(*a.ends_at, a.starts_at) : now + validity;
    json item = {{"labels", label_set(a.labels)},
                 {"annotations", label_set(a.annotations)},
                 {"startsAt", rfc3339(a.starts_at)},
                 {"endsAt", rfc3339(ends)}};
    // Alertmanager checks that generatorURL is a URL: leave it out rather than send "".
    if (!a.generator_url.empty()) item["generatorURL"] = a.generator_url;
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace gpureap::alert
