#include "alert/sink_kind.h"

#include <chrono>
#include <cstdlib>

#include "alert/alertmanager_payload.h"
#include "alert/alertmanager_sender.h"
#include "alert/exec_sender.h"
#include "alert/http_sender.h"
#include "alert/payload.h"

namespace gpureap::alert {
namespace {

// The Alertmanager webhook JSON, also what an exec sink's command reads on stdin.
std::optional<std::string> webhook_body(const SinkConfig& sink, const Notification& n,
                                        const std::string& external_url) {
  return to_text(webhook_payload(n, sink.name, external_url));
}

std::optional<std::string> slack_body(const SinkConfig&, const Notification& n,
                                      const std::string&) {
  auto j = slack_payload(n);
  if (!j) return std::nullopt;
  return to_text(*j);
}

std::optional<std::string> alertmanager_body(const SinkConfig&, const Notification& n,
                                             const std::string&) {
  return to_text(alertmanager_payload(n.alerts, std::chrono::system_clock::now()));
}

// The row of each type: an enumerator without a case does not compile (-Wswitch, no default);
// a value past the last enumerator has no row.
const SinkKind* row_of(SinkType type) {
  static const SinkKind kWebhook{SinkType::Webhook, "webhook", SinkTarget::Url, make_http_sender,
                                 webhook_body};
  static const SinkKind kSlack{SinkType::Slack, "slack", SinkTarget::Url, make_http_sender,
                               slack_body};
  static const SinkKind kExec{SinkType::Exec, "exec", SinkTarget::Command, make_exec_sender,
                              webhook_body};
  static const SinkKind kAlertmanager{SinkType::Alertmanager,   "alertmanager",    SinkTarget::Urls,
                                      make_alertmanager_sender, alertmanager_body, true};
  switch (type) {
    case SinkType::Webhook:
      return &kWebhook;
    case SinkType::Slack:
      return &kSlack;
    case SinkType::Exec:
      return &kExec;
    case SinkType::Alertmanager:
      return &kAlertmanager;
  }
  return nullptr;
}

}  // namespace

const SinkKind& sink_kind(SinkType type) {
  const SinkKind* row = row_of(type);
  if (!row) std::abort();  // not a SinkType: a cast of a number that names none
  return *row;
}

const std::vector<SinkKind>& sink_kinds() {
  static const std::vector<SinkKind> rows = [] {
    std::vector<SinkKind> out;
    for (int t = 0; const SinkKind* row = row_of(static_cast<SinkType>(t)); ++t)
      out.push_back(*row);
    return out;
  }();
  return rows;
}

std::string sink_type_names(std::string_view last, bool (*which)(const SinkKind&)) {
  std::vector<std::string_view> names;
  for (const auto& k : sink_kinds())
    if (!which || which(k)) names.push_back(k.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? last : std::string_view(", ");
    out += names[i];
  }
  return out;
}

std::string_view to_string(SinkType t) {
  const SinkKind* row = row_of(t);
  return row ? row->name : "?";
}

std::optional<SinkType> sink_type_from_string(std::string_view s) {
  for (const auto& k : sink_kinds())
    if (s == k.name) return k.type;
  return std::nullopt;
}

}  // namespace gpureap::alert
