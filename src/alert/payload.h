#pragma once
// What sinks send: Alertmanager's webhook JSON (webhook and exec sinks) and a Slack
// incoming-webhook message. Pure; untrusted text (process names, users, finding evidence) is
// escaped by the JSON serializer, and for Slack's markup as well.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "alert/alert.h"

namespace gpureap::alert {

// Alertmanager's webhook payload, version "4":
//   {"version": "4", "groupKey": "{}:{alertname=\"X\"}", "truncatedAlerts": 0,
//    "status": "firing" | "resolved", "receiver": <sink name>,
//    "groupLabels": {"alertname": "X"}, "commonLabels": {...}, "commonAnnotations": {...},
//    "externalURL": <the daemon's URL>,
//    "alerts": [{"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL",
//                "fingerprint"}]}
// status is "firing" while any alert in it fires. endsAt is "0001-01-01T00:00:00Z" while an
// alert fires, as Alertmanager sends it.
nlohmann::json webhook_payload(const Notification& n, const std::string& receiver,
                               const std::string& external_url);

// {"text": "..."}: one line per alert, "[FIRING] name on host: summary". Resolved policy
// events are left out (they end as soon as they start); nothing left: no message.
std::optional<nlohmann::json> slack_payload(const Notification& n);

// Slack's markup escapes: & < > become &amp; &lt; &gt; (Slack reads <...> as links and mentions).
std::string slack_escape(std::string_view text);

// RFC 3339 in UTC with milliseconds: 2026-05-01T12:00:00.123Z.
std::string rfc3339(TimePoint t);

// The JSON text a sink sends: invalid UTF-8 in untrusted text becomes U+FFFD instead of failing.
std::string to_text(const nlohmann::json& j);

}  // namespace gpureap::alert
