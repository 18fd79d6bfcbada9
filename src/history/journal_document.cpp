#include "history/journal_document.h"

#include "core/field_count.h"
#include "history/json_fields.h"
#include "text/enum_names.h"
#include "text/escape.h"

namespace gpureap::history {
namespace {

using nlohmann::json;
using namespace json_fields;

static_assert(core::field_count<JournalLane>() == 16, "a lane field is not written or read");
static_assert(core::field_count<JournalEvent>() == 11, "an event field is not written or read");
static_assert(core::field_count<JournalView>() == 2, "a journal member is not written or read");

json lane_json(const JournalLane& l) {
  return {{"pid", l.pid},
          {"start_ticks", l.start_ticks},
          {"gpu", l.gpu},
          {"ppid", l.ppid},
          {"comm", text::utf8_valid(l.comm)},
          {"user", text::utf8_valid(l.user)},
          {"first_seen", unix_seconds(l.first_seen)},
          {"last_seen", unix_seconds(l.last_seen)},
          {"listed", l.listed},
          {"keeper", l.keeper},
          {"exited", l.exited ? json(unix_seconds(*l.exited)) : json(nullptr)},
          {"ghost", l.ghost ? json(unix_seconds(*l.ghost)) : json(nullptr)},
          {"leaked", l.leaked},
          {"stopped", l.stopped},
          {"open", l.open},
          {"peak_bytes", l.peak_bytes}};
}

// Who acted (uid, user) is written for an announced event only; command and reason when said.
json event_json(const JournalEvent& e) {
  json j = {{"time", unix_seconds(e.at)},
            {"kind", to_string(e.kind)},
            {"gpu", maybe(e.gpu)},
            {"pid", e.pid},
            {"other", e.other},
            {"bytes", e.bytes},
            {"text", text::utf8_valid(e.text)}};
  if (e.uid) {
    j["uid"] = *e.uid;
    j["user"] = text::utf8_valid(e.user);
  }
  if (!e.command.empty()) j["command"] = text::utf8_valid(e.command);
  if (!e.reason.empty()) j["reason"] = text::utf8_valid(e.reason);
  return j;
}

template <class T>
T whole_or_zero(const json& o, const char* name, const std::string& where) {
  const json& v = optional_field(o, name);
  return v.is_null() ? T{0} : integer_of<T>(v, at(where, name));
}

JournalLane lane_from(const json& l, const std::string& where) {
  JournalLane x;
  x.pid = integer_of<pid_t>(field(l, "pid", where), at(where, "pid"));
  x.start_ticks = whole_or_zero<uint64_t>(l, "start_ticks", where);
  x.gpu = integer_of<unsigned>(field(l, "gpu", where), at(where, "gpu"));
  x.ppid = whole_or_zero<pid_t>(l, "ppid", where);
  x.comm = string_of(optional_field(l, "comm"), at(where, "comm"));
  x.user = string_of(optional_field(l, "user"), at(where, "user"));
  x.first_seen = time_of(field(l, "first_seen", where), at(where, "first_seen"));
  x.last_seen = time_of(field(l, "last_seen", where), at(where, "last_seen"));
  x.listed = flag_of(optional_field(l, "listed"), at(where, "listed"));
  x.keeper = flag_of(optional_field(l, "keeper"), at(where, "keeper"));
  x.exited = maybe_time_of(optional_field(l, "exited"), at(where, "exited"));
  x.ghost = maybe_time_of(optional_field(l, "ghost"), at(where, "ghost"));
  x.leaked = flag_of(optional_field(l, "leaked"), at(where, "leaked"));
  x.stopped = flag_of(optional_field(l, "stopped"), at(where, "stopped"));
  x.open = flag_of(optional_field(l, "open"), at(where, "open"));
  x.peak_bytes = whole_or_zero<uint64_t>(l, "peak_bytes", where);
  return x;
}

// Empty for a kind this gpureap does not know.
std::optional<JournalEvent> event_from(const json& e, const std::string& where) {
  auto kind =
      text::enum_from_name<JournalEventKind>(string_of(field(e, "kind", where), at(where, "kind")));
  JournalEvent x;
  x.at = time_of(field(e, "time", where), at(where, "time"));
  const json& gpu = optional_field(e, "gpu");
  if (!gpu.is_null()) x.gpu = integer_of<unsigned>(gpu, at(where, "gpu"));
  x.pid = whole_or_zero<pid_t>(e, "pid", where);
  x.other = whole_or_zero<pid_t>(e, "other", where);
  x.bytes = whole_or_zero<uint64_t>(e, "bytes", where);
  x.text = string_of(optional_field(e, "text"), at(where, "text"));
  const json& uid = optional_field(e, "uid");
  if (!uid.is_null()) x.uid = integer_of<uid_t>(uid, at(where, "uid"));
  x.user = string_of(optional_field(e, "user"), at(where, "user"));
  x.command = string_of(optional_field(e, "command"), at(where, "command"));
  x.reason = string_of(optional_field(e, "reason"), at(where, "reason"));
  if (!kind) return std::nullopt;
  x.kind = *kind;
  return x;
}

}  // namespace

void journal_to_json(const JournalView& journal, json& incident) {
  json lanes = json::array();
  for (const auto& l : journal.lanes) lanes.push_back(lane_json(l));
  json events = json::array();
  for (const auto& e : journal.events) events.push_back(event_json(e));
  incident["lanes"] = std::move(lanes);
  incident["events"] = std::move(events);
}

core::Result<JournalView> journal_from_json(const json& incident) {
  try {
    JournalView out;
    size_t i = 0;
    for (const auto& l : list_of(field(incident, "lanes", "incident"), "incident.lanes"))
      out.lanes.push_back(lane_from(l, item("incident", "lanes", i++)));
    i = 0;
    for (const auto& e : list_of(field(incident, "events", "incident"), "incident.events"))
      if (auto event = event_from(e, item("incident", "events", i++)))
        out.events.push_back(std::move(*event));
    return out;
  } catch (const Malformed& m) {
    return core::Error{"the history's " + text::terminal_safe(m.what),
                       "save the daemon's /api/v1/history again"};
  }
}

}  // namespace gpureap::history
