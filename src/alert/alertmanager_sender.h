#pragma once
// The alertmanager sink's sender: one POST of the payload to /api/v2/alerts under each of the
// sink's urls. Alertmanager peers do not share alerts (only silences and what they notified),
// so an HA pair must get every alert from every sender.
#include <memory>
#include <string>

#include "alert/sender.h"
#include "core/result.h"

namespace gpureap::alert {

// The API endpoint under a base URL: "http://am:9093" and "http://am:9093/" give
// "http://am:9093/api/v2/alerts", "https://host/alertmanager" (a route prefix) gives
// "https://host/alertmanager/api/v2/alerts"; a URL that already names the endpoint is kept.
std::string alertmanager_endpoint(const std::string& base_url);

// An attempt succeeds when at least one Alertmanager took the alerts: the others are logged,
// and get every firing alert again at the next re-send. It fails when none did.
std::unique_ptr<Sender> make_alertmanager_sender(const SinkConfig& sink);

}  // namespace gpureap::alert
