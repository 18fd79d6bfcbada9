// The audit line format. Every field is always written: a value gpureap does not know is
// null, so a reader (jq, a log shipper's schema) sees one stable shape. Reading is lenient
// where it can be (unknown fields are ignored, an optional field of the wrong type reads as
// unknown) and strict only about the fields without which a line means nothing.
#include "audit/record.h"

#include <limits>

#include "core/field_count.h"
#include "text/escape.h"
#include "text/rfc3339.h"
#include "text/time_format.h"

namespace gpureap::audit {
namespace {

using json = nlohmann::json;

// The fields written and read below, per struct: a field added to one stops the build here
// until it is carried both ways (and test_audit_record's full record sets it).
static_assert(core::field_count<ProcessIdentity>() == 8, "a process field is not in the line");
static_assert(core::field_count<GpuMemory>() == 2, "a GpuMemory field is not in the line");
static_assert(core::field_count<Actor>() == 3, "an Actor field is not in the line");
static_assert(core::field_count<Signalled>() == 6, "a Signalled field is not in the line");
static_assert(core::field_count<Record>() == 16, "a Record field is not in the line");

// Process names, command lines and error texts are untrusted bytes; JSON needs UTF-8.
std::string text(const std::string& s) {
  return text::utf8_valid(s);
}

// One builder for both shapes: `json` (sorted keys, for documents) and `ordered_json` (the
// log line, time first, as people expect when they tail it).
template <class J>
struct Builder {
  template <class T>
  static J or_null(const std::optional<T>& v) {
    return v ? J(*v) : J(nullptr);
  }

  static J optional_text(const std::optional<std::string>& s) {
    return s ? J(text(*s)) : J(nullptr);
  }

  static J text_array(const std::vector<std::string>& items) {
    J out = J::array();
    for (const auto& s : items) out.push_back(text(s));
    return out;
  }

  // The sum of the memory the driver reported; null when it reported none.
  static J known_memory_sum(const std::vector<GpuMemory>& memory) {
    std::optional<uint64_t> sum;
    for (const auto& m : memory)
      if (m.bytes) sum = sum.value_or(0) + *m.bytes;
    return or_null(sum);
  }

  static J process(const ProcessIdentity& p) {
    // Unknown is null, as everywhere in the format: a record about no process (the writer's
    // records-dropped note) has no PID, not PID 0.
    return {{"pid", p.pid > 0 ? J(p.pid) : J(nullptr)},
            {"start_ticks", or_null(p.start_ticks)},
            {"start_time", p.start_time ? J(text::iso8601_utc(*p.start_time)) : J(nullptr)},
            {"uid", or_null(p.uid)},
            {"user", optional_text(p.user)},
            {"comm", text(p.comm)},
            {"cmdline", text_array(p.cmdline)},
            {"container", optional_text(p.container)}};
  }

  static J signalled(const std::vector<Signalled>& list) {
    J out = J::array();
    for (const auto& s : list)
      out.push_back({{"pid", s.pid},
                     {"start_ticks", or_null(s.start_ticks)},
                     {"comm", text(s.comm)},
                     {"uid", or_null(s.uid)},
                     {"user", optional_text(s.user)},
                     {"signals", text_array(s.signals)}});
    return out;
  }

  static J record(const Record& r) {
    J memory = J::array();
    for (const auto& m : r.memory) memory.push_back({{"gpu", m.gpu}, {"bytes", or_null(m.bytes)}});
    return {{"time", text::iso8601_utc(r.time)},
            {"host", text(r.host)},
            {"event", text(r.event)},
            {"policy", text(r.policy)},
            {"action", text(r.action)},
            {"enforced", r.enforced},
            {"outcome", text(r.outcome)},
            {"process", process(r.process)},
            {"memory", memory},
            {"memory_bytes", known_memory_sum(r.memory)},
            {"released_bytes", or_null(r.released_bytes)},
            {"released_at", r.released_at ? J(text::iso8601_utc(*r.released_at)) : J(nullptr)},
            {"reasons", text_array(r.reasons)},
            {"attempt", r.attempt > 0 ? J(r.attempt) : J(nullptr)},
            {"detail", text(r.detail)},
            {"signalled", signalled(r.signalled)},
            {"actor", r.actor ? J{{"uid", r.actor->uid},
                                  {"user", text(r.actor->user)},
                                  {"command", text(r.actor->command)}}
                              : J(nullptr)}};
  }
};

// --- reading ---------------------------------------------------------------------------------

const json* field(const json& object, const char* name) {
  auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string string_or_empty(const json& object, const char* name) {
  const json* v = field(object, name);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

std::optional<std::string> optional_string(const json& object, const char* name) {
  const json* v = field(object, name);
  if (v && v->is_string()) return v->get<std::string>();
  return std::nullopt;
}

template <class T>
std::optional<T> optional_unsigned(const json& object, const char* name) {
  const json* v = field(object, name);
  if (!v || !v->is_number_unsigned()) return std::nullopt;
  auto n = v->get<uint64_t>();
  if (n > std::numeric_limits<T>::max()) return std::nullopt;
  return static_cast<T>(n);
}

std::vector<std::string> string_array(const json& object, const char* name) {
  std::vector<std::string> out;
  const json* v = field(object, name);
  if (!v || !v->is_array()) return out;
  for (const auto& item : *v)
    if (item.is_string()) out.push_back(item.get<std::string>());
  return out;
}

std::vector<GpuMemory> memory_from_json(const json& object) {
  std::vector<GpuMemory> out;
  const json* v = field(object, "memory");
  if (!v || !v->is_array()) return out;
  for (const auto& item : *v) {
    if (!item.is_object()) continue;
    auto gpu = optional_unsigned<unsigned>(item, "gpu");
    if (!gpu) continue;
    out.push_back({*gpu, optional_unsigned<uint64_t>(item, "bytes")});
  }
  return out;
}

// A list entry without a PID names no process and is skipped.
std::vector<Signalled> signalled_from_json(const json& object) {
  std::vector<Signalled> out;
  const json* v = field(object, "signalled");
  if (!v || !v->is_array()) return out;
  for (const auto& item : *v) {
    if (!item.is_object()) continue;
    const json* pid = field(item, "pid");
    if (!pid || !pid->is_number_integer() || pid->get<int64_t>() <= 0 ||
        pid->get<int64_t>() > std::numeric_limits<pid_t>::max())
      continue;
    out.push_back({static_cast<pid_t>(pid->get<int64_t>()),
                   optional_unsigned<uint64_t>(item, "start_ticks"), string_or_empty(item, "comm"),
                   optional_unsigned<uid_t>(item, "uid"), optional_string(item, "user"),
                   string_array(item, "signals")});
  }
  return out;
}

void require_string(const json& j, const char* name, std::string& into,
                    std::vector<std::string>& problems) {
  const json* v = field(j, name);
  if (!v)
    problems.push_back(std::string("\"") + name + "\" is missing");
  else if (!v->is_string())
    problems.push_back(std::string("\"") + name + "\" is not a string");
  else
    into = v->get<std::string>();
}

void read_process(const json& j, ProcessIdentity& p, std::vector<std::string>& problems) {
  const json* process = field(j, "process");
  if (!process) return problems.push_back("\"process\" is missing");
  if (!process->is_object()) return problems.push_back("\"process\" is not an object");
  const json* pid = field(*process, "pid");
  if (!pid) {
    if (!process->contains("pid")) problems.push_back("\"process.pid\" is missing");
    return;  // null: a record about no process
  }
  if (!pid->is_number_integer() || pid->get<int64_t>() < 0 ||
      pid->get<int64_t>() > std::numeric_limits<pid_t>::max())
    return problems.push_back("\"process.pid\" is not a PID");
  p.pid = static_cast<pid_t>(pid->get<int64_t>());
  p.start_ticks = optional_unsigned<uint64_t>(*process, "start_ticks");
  if (auto t = optional_string(*process, "start_time")) p.start_time = text::parse_rfc3339(*t);
  p.uid = optional_unsigned<uid_t>(*process, "uid");
  p.user = optional_string(*process, "user");
  p.comm = string_or_empty(*process, "comm");
  p.cmdline = string_array(*process, "cmdline");
  p.container = optional_string(*process, "container");
}

}  // namespace

nlohmann::json to_json(const Record& r) {
  return Builder<json>::record(r);
}

std::string to_json_line(const Record& r) {
  return Builder<nlohmann::ordered_json>::record(r).dump(
             -1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
         "\n";
}

core::Result<Record> record_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return core::Error{"not a JSON object", ""};
  Record r;
  std::vector<std::string> problems;
  std::string time;
  require_string(j, "time", time, problems);
  if (const json* t = field(j, "time"); t && t->is_string()) {
    if (auto parsed = text::parse_rfc3339(time))
      r.time = *parsed;
    else
      problems.push_back("\"time\" is not an RFC 3339 time");
  }
  require_string(j, "event", r.event, problems);
  require_string(j, "policy", r.policy, problems);
  require_string(j, "outcome", r.outcome, problems);
  read_process(j, r.process, problems);
  if (!problems.empty()) {
    std::string message;
    for (const auto& p : problems) message += (message.empty() ? "" : ", ") + p;
    return core::Error{message, ""};
  }
  r.host = string_or_empty(j, "host");
  r.action = string_or_empty(j, "action");
  const json* enforced = field(j, "enforced");
  r.enforced = enforced && enforced->is_boolean() && enforced->get<bool>();
  r.memory = memory_from_json(j);
  r.released_bytes = optional_unsigned<uint64_t>(j, "released_bytes");
  if (const json* t = field(j, "released_at"); t && t->is_string())
    if (auto parsed = text::parse_rfc3339(t->get<std::string>())) r.released_at = *parsed;
  r.reasons = string_array(j, "reasons");
  r.attempt = optional_unsigned<unsigned>(j, "attempt").value_or(0);
  r.detail = string_or_empty(j, "detail");
  r.signalled = signalled_from_json(j);
  if (const json* a = field(j, "actor"); a && a->is_object())
    if (auto uid = optional_unsigned<uid_t>(*a, "uid"))
      r.actor = Actor{*uid, string_or_empty(*a, "user"), string_or_empty(*a, "command")};
  return r;
}

std::string describe(const Signalled& s) {
  std::string who = text::terminal_safe(s.comm);
  if (s.user)
    who += (who.empty() ? "user " : ", user ") + text::terminal_safe(*s.user);
  else if (s.uid)
    who += (who.empty() ? "uid " : ", uid ") + std::to_string(*s.uid);
  return "PID " + std::to_string(s.pid) + (who.empty() ? "" : " (" + who + ")");
}

}  // namespace gpureap::audit
