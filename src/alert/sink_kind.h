#pragma once
// Every sink type in one table, a row per type: its name in the config, what a [[sink]] of it is
// given, the sender that delivers to it and the body it sends. The config's checks, the
// dispatcher and the senders read the row; none of them tests a type by hand, so a new type is
// one row (and its enumerator), and a type without a row does not compile.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alert/sink.h"

namespace gpureap::alert {

class Sender;
struct Notification;

// What a [[sink]] of the type is given.
enum class SinkTarget {
  Url,      // one http:// or https:// url
  Urls,     // one url or a list of them (an HA pair gets every alert)
  Command,  // a command to run, no url
};

struct SinkKind {
  SinkType type;
  std::string_view name;  // the config's `type` value
  SinkTarget target;
  std::unique_ptr<Sender> (*make_sender)(const SinkConfig& sink);
  // The message of one notification for the sink; empty: none (nothing this type can say).
  std::optional<std::string> (*body)(const SinkConfig& sink, const Notification& n,
                                     const std::string& external_url);
  // The receiver lets an alert end unless it is posted again: the dispatcher re-sends every
  // firing alert each kAlertmanagerResend.
  bool resends_firing = false;
};

const SinkKind& sink_kind(SinkType type);
// Every row, in the enum's order.
const std::vector<SinkKind>& sink_kinds();
// The names of the types `which` accepts (every type when null), in order, joined by ", " and
// `last` before the last one: "webhook, slack, exec or alertmanager".
std::string sink_type_names(std::string_view last, bool (*which)(const SinkKind&) = nullptr);

}  // namespace gpureap::alert
