#include "alert/payload.h"

#include "text/time_format.h"

namespace gpureap::alert {
namespace {

using nlohmann::json;

constexpr const char* kZeroTime = "0001-01-01T00:00:00Z";

// The labels (or annotations) every alert shares with the same value.
Labels common(const Notification& n, Labels Alert::*field) {
  if (n.alerts.empty()) return {};
  Labels out = n.alerts.front().*field;
  for (const auto& a : n.alerts)
    std::erase_if(out, [&](const auto& kv) {
      auto it = (a.*field).find(kv.first);
      return it == (a.*field).end() || it->second != kv.second;
    });
  return out;
}

json object(const Labels& labels) {
  json j = json::object();
  for (const auto& [k, v] : labels) j[k] = v;
  return j;
}

}  // namespace

std::string rfc3339(TimePoint t) {
  return text::iso8601_utc(t);
}

std::string to_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json webhook_payload(const Notification& n, const std::string& receiver,
                     const std::string& external_url) {
  json alerts = json::array();
  for (const auto& a : n.alerts)
    alerts.push_back({{"status", a.resolved() ? "resolved" : "firing"},
                      {"labels", object(a.labels)},
                      {"annotations", object(a.annotations)},
                      {"startsAt", rfc3339(a.starts_at)},
                      {"endsAt", a.ends_at ? rfc3339(*a.ends_at) : kZeroTime},
                      {"generatorURL", a.generator_url},
                      {"fingerprint", fingerprint(a.labels)}});
  Labels group{{"alertname", n.rule}};
  return {{"version", "4"},
          // Alertmanager's form: the route ("{}" for the root) and the group's labels.
          {"groupKey", "{}:{alertname=" + to_text(json(n.rule)) + "}"},
          {"truncatedAlerts", 0},
          {"status", n.firing() ? "firing" : "resolved"},
          {"receiver", receiver},
          {"groupLabels", object(group)},
          {"commonLabels", object(common(n, &Alert::labels))},
          {"commonAnnotations", object(common(n, &Alert::annotations))},
          {"externalURL", external_url},
          {"alerts", std::move(alerts)}};
}

std::string slack_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::optional<json> slack_payload(const Notification& n) {
  std::string text;
  for (const auto& a : n.alerts) {
    if (a.event && a.resolved()) continue;
    auto label = [&](const char* name) {
      auto it = a.labels.find(name);
      return it == a.labels.end() ? std::string() : it->second;
    };
    auto summary = a.annotations.find("summary");
    if (!text.empty()) text += "\n";
    text += a.resolved() ? "*[RESOLVED]* " : "*[FIRING]* ";
    text += slack_escape(label("alertname"));
    if (auto host = label("instance"); !host.empty()) text += " on " + slack_escape(host);
    if (summary != a.annotations.end()) text += ": " + slack_escape(summary->second);
  }
  if (text.empty()) return std::nullopt;
  return json{{"text", text}};
}

}  // namespace gpureap::alert
