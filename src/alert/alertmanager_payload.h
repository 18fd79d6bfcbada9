#pragma once
// What the alertmanager sink posts to Alertmanager's API (POST /api/v2/alerts): a JSON array of
//   {"labels": {...}, "annotations": {...}, "startsAt": RFC 3339, "endsAt": RFC 3339,
//    "generatorURL": "..."}
// Pure. Alertmanager rejects the whole request (HTTP 400) when one label name is not a valid
// Prometheus name, so names are made valid here; an empty value means no label to Alertmanager,
// so it is left out. Values are untrusted text, escaped by the JSON serializer (invalid UTF-8
// becomes U+FFFD).
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "alert/alert.h"

namespace gpureap::alert {

// How often the sink posts every firing alert again. Alertmanager resolves an alert it has not
// heard of by its endsAt, so each post says a firing alert lasts kAlertmanagerValidity: four
// re-sends may be lost (a restart of Alertmanager, a network blip) before it ends on its own,
// and a daemon that stops sending (it died, the node is gone) lets its alerts end within that
// time, as Prometheus's do. Alertmanager's resolve_timeout plays no part.
inline constexpr std::chrono::seconds kAlertmanagerResend{60};
inline constexpr std::chrono::seconds kAlertmanagerValidity = 4 * kAlertmanagerResend;

// [a-zA-Z_][a-zA-Z0-9_]*: any other byte becomes '_', a leading digit gets a '_' before it,
// an empty name becomes "_".
std::string alertmanager_label_name(std::string_view name);

// A firing alert's endsAt is now + validity; a resolved alert's, when it ended.
nlohmann::json alertmanager_payload(const std::vector<Alert>& alerts, TimePoint now,
                                    std::chrono::milliseconds validity = kAlertmanagerValidity);

}  // namespace gpureap::alert
