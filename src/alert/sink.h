#pragma once
// Where alerts go, from a [[sink]] table of the daemon's config.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::alert {

enum class SinkType {
  Webhook,  // POST the Alertmanager webhook JSON to url
  Slack,    // POST {"text": ...} to a Slack incoming-webhook url
  Exec,     // run command with the Alertmanager webhook JSON on stdin
  // POST the alerts to Alertmanager's API (/api/v2/alerts under each url), firing ones again
  // every kAlertmanagerResend, so that Alertmanager routes, groups, silences and inhibits them
  Alertmanager,
};
// The config's names of the types (sink_kind.h has the table).
std::string_view to_string(SinkType t);
std::optional<SinkType> sink_type_from_string(std::string_view s);

struct SinkConfig {
  std::string name;
  unsigned line = 0;
  SinkType type = SinkType::Webhook;
  std::string url;                   // webhook, slack: http:// or https://; alertmanager: urls[0]
  std::vector<std::string> urls;     // alertmanager: each base URL (an HA pair gets every alert)
  std::vector<std::string> command;  // exec: argv, argv[0] an absolute path
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};       // per attempt
  unsigned retries = 3;                                              // after the first attempt
  std::chrono::milliseconds retry_backoff{std::chrono::seconds(1)};  // doubles per retry

  bool operator==(const SinkConfig&) const = default;
};

}  // namespace gpureap::alert
