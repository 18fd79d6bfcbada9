#include "daemon/local_protocol.h"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "base/phase_timer.h"
#include "core/field_count.h"
#include "output/evidence_wire.h"
#include "output/snapshot_json.h"
#include "output/snapshot_wire.h"
#include "output/wire_tape.h"

namespace gpureap::daemon {
namespace {

// The fields each request and answer carries, written and read below: a field added to one
// stops the build here until it is (test_daemon_local_protocol round-trips every field).
static_assert(core::field_count<EvidenceRequest>() == 3, "an EvidenceRequest field is not sent");
static_assert(core::field_count<HistoryRequest>() == 2, "a HistoryRequest field is not sent");
static_assert(core::field_count<AnnouncedTarget>() == 4, "an AnnouncedTarget field is not sent");
static_assert(core::field_count<AnnounceRequest>() == 6, "an AnnounceRequest field is not sent");
static_assert(core::field_count<Answer>() == 4, "an Answer field is not sent");
static_assert(core::field_count<EvidenceAnswer>() == 4, "an EvidenceAnswer field is not sent");

using nlohmann::json;

constexpr uint64_t kMaxGpuIndex = 1u << 20;
constexpr uint64_t kMaxPid = 1u << 22;  // the kernel's PID_MAX_LIMIT
// Longer than any settle the daemon keeps samples for: it answers "no sample that old".
constexpr uint64_t kMaxSettleMs = 24ull * 3600 * 1000;

core::Error bad(const std::string& what) {
  return {"bad request: " + what, ""};
}

}  // namespace

EvidenceRequest EvidenceRequest::current(std::chrono::milliseconds settle) {
  return {output::kEvidenceWireVersion, output::kSnapshotWireVersion, settle};
}

std::string default_local_socket() {
  const char* env = std::getenv(kLocalSocketEnv);
  return env ? std::string(env) : std::string(kDefaultLocalSocket);
}

namespace {

json evidence_line(const EvidenceRequest& r) {
  return {{"command", "evidence"},
          {"evidence", r.evidence},
          {"wire", r.wire},
          {"settle_ms", r.settle.count()}};
}

// A request's fields but "command", one by one; false with `why` set on the first bad one.
using FieldReader = bool (*)(const std::string& key, const json& value, Request& r,
                             std::string& why);

bool unknown(const std::string& key, std::string& why) {
  // A newer client's option this daemon cannot honour: the client runs on its own instead.
  why = "unknown field \"" + key + "\"";
  return false;
}

// A version the command reads that this daemon does not write: refused, naming both.
bool version_field(const std::string& key, const json& value, int mine, int& out,
                   std::string& why) {
  if (value.is_number_integer() && value.get<int64_t>() == mine) {
    out = mine;
    return true;
  }
  why = "the command reads " + key + " version " + value.dump() + ", this daemon writes " +
        std::to_string(mine) +
        ": they are different gpureap versions (restart the daemon after an upgrade)";
  return false;
}

bool evidence_field(const std::string& key, const json& value, Request& request, std::string& why) {
  auto& r = std::get<EvidenceRequest>(request);
  if (key == "evidence")
    return version_field(key, value, output::kEvidenceWireVersion, r.evidence, why);
  if (key == "wire") return version_field(key, value, output::kSnapshotWireVersion, r.wire, why);
  if (key == "settle_ms") {
    if (value.is_number_unsigned() && value.get<uint64_t>() <= kMaxSettleMs) {
      r.settle = std::chrono::milliseconds(value.get<uint64_t>());
      return true;
    }
    why = "\"settle_ms\" must be a number of milliseconds up to " + std::to_string(kMaxSettleMs);
    return false;
  }
  return unknown(key, why);
}

bool history_field(const std::string& key, const json& v, Request& r, std::string& why) {
  if (key == "since" && v.is_string() && v.get<std::string>().size() <= 64) {
    std::get<HistoryRequest>(r).since = v.get<std::string>();
    return true;
  }
  if (key == "until" && (v.is_null() || (v.is_string() && v.get<std::string>().size() <= 64))) {
    if (v.is_string()) std::get<HistoryRequest>(r).until = v.get<std::string>();
    return true;
  }
  if (key == "since" || key == "until") {
    why = "\"" + key + "\" must be a string of at most 64 characters";
    return false;
  }
  return unknown(key, why);
}

bool short_text(const json& v, size_t max, std::string& into) {
  if (!v.is_string() || v.get<std::string>().size() > max) return false;
  into = v.get<std::string>();
  return true;
}

std::optional<AnnouncedTarget> announced_target(const json& t) {
  if (!t.is_object()) return std::nullopt;
  AnnouncedTarget out;
  for (const auto& [key, v] : t.items()) {
    if (key == "pid" && v.is_number_unsigned() && v.get<uint64_t>() > 0 &&
        v.get<uint64_t>() <= kMaxPid)
      out.pid = static_cast<pid_t>(v.get<uint64_t>());
    else if (key == "start_ticks" && v.is_number_unsigned())
      out.start_ticks = v.get<uint64_t>();
    else if (key == "comm" && short_text(v, 64, out.comm))
      continue;
    else if (key == "gpu" && v.is_null())
      continue;
    else if (key == "gpu" && v.is_number_unsigned() && v.get<uint64_t>() <= kMaxGpuIndex)
      out.gpu = static_cast<unsigned>(v.get<uint64_t>());
    else
      return std::nullopt;
  }
  if (out.pid == 0) return std::nullopt;
  return out;
}

bool announce_field(const std::string& key, const json& v, Request& r, std::string& why) {
  auto& a = std::get<AnnounceRequest>(r);
  if (key == "by" && short_text(v, 256, a.by)) return true;
  if (key == "signal" && short_text(v, 16, a.signal)) return true;
  if (key == "reason" && short_text(v, 512, a.reason)) return true;
  if (key == "gpu" && v.is_null()) return true;
  if (key == "gpu" && v.is_number_unsigned() && v.get<uint64_t>() <= kMaxGpuIndex) {
    a.gpu = static_cast<unsigned>(v.get<uint64_t>());
    return true;
  }
  if (key == "more" && v.is_number_unsigned() && v.get<uint64_t>() <= kMaxPid) {
    a.more = static_cast<size_t>(v.get<uint64_t>());
    return true;
  }
  if (key == "targets" && v.is_array() && v.size() <= kMaxAnnouncedTargets) {
    for (const auto& t : v) {
      auto target = announced_target(t);
      if (!target) {
        why = "\"targets\" holds an entry that is not {pid, start_ticks, comm, gpu}";
        return false;
      }
      a.targets.push_back(std::move(*target));
    }
    return true;
  }
  if (key == "by" || key == "signal" || key == "reason" || key == "gpu" || key == "targets" ||
      key == "more") {
    why = "\"" + key + "\" has a value of the wrong type or size";
    return false;
  }
  return unknown(key, why);
}

json announce_line(const AnnounceRequest& a) {
  json targets = json::array();
  for (const auto& t : a.targets)
    targets.push_back({{"pid", t.pid},
                       {"start_ticks", t.start_ticks},
                       {"comm", t.comm},
                       {"gpu", t.gpu ? json(*t.gpu) : json(nullptr)}});
  return {{"command", "announce"},
          {"by", a.by},
          {"signal", a.signal},
          {"reason", a.reason},
          {"gpu", a.gpu ? json(*a.gpu) : json(nullptr)},
          {"targets", targets},
          {"more", a.more}};
}

// "snapshot" and "releases" take no options.
bool no_field(const std::string& key, const json&, Request&, std::string& why) {
  return unknown(key, why);
}

}  // namespace

void fit_announcement(AnnounceRequest& a) {
  while (request_line(a).size() > kMaxRequestBytes) {
    if (!a.targets.empty()) {
      a.targets.pop_back();
      ++a.more;
    } else if (!a.reason.empty()) {
      a.reason.clear();
    } else {
      a.by.resize(a.by.size() / 2);
    }
  }
}

std::string request_line(const Request& request) {
  json j = std::visit(
      [](const auto& r) -> json {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, EvidenceRequest>) return evidence_line(r);
        if constexpr (std::is_same_v<T, SnapshotRequest>) return {{"command", "snapshot"}};
        if constexpr (std::is_same_v<T, ReleasesRequest>) return {{"command", "releases"}};
        if constexpr (std::is_same_v<T, HistoryRequest>)
          return r.until ? json{{"command", "history"}, {"since", r.since}, {"until", *r.until}}
                         : json{{"command", "history"}, {"since", r.since}};
        if constexpr (std::is_same_v<T, AnnounceRequest>) return announce_line(r);
      },
      request);
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

core::Result<Request> parse_request(std::string_view line) {
  if (line.size() > kMaxRequestBytes)
    return bad("longer than " + std::to_string(kMaxRequestBytes) + " bytes");
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  json j = json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded()) return bad("not JSON");
  if (!j.is_object()) return bad("not a JSON object");
  auto command = j.find("command");
  if (command == j.end()) return bad("no \"command\"");
  Request r;
  FieldReader field = nullptr;
  std::string name = command->is_string() ? command->get<std::string>() : "";
  if (name == "ps" || name == "doctor") {
    // What commands older than this daemon ask: it no longer renders their text.
    return bad("\"" + name +
               "\" is asked by a gpureap older than this daemon, which sends `ps` and `doctor` "
               "their evidence (\"evidence\" version " +
               std::to_string(output::kEvidenceWireVersion) +
               "); the command scans on its own: upgrade it to the daemon's version");
  }
  if (name == "evidence") {
    r = EvidenceRequest{};
    field = evidence_field;
  } else if (name == "snapshot") {
    r = SnapshotRequest{};
    field = no_field;
  } else if (name == "releases") {
    r = ReleasesRequest{};
    field = no_field;
  } else if (name == "history") {
    r = HistoryRequest{};
    field = history_field;
  } else if (name == "announce") {
    r = AnnounceRequest{};
    field = announce_field;
  } else {
    return bad(
        "\"command\" must be \"evidence\", \"snapshot\", \"releases\", \"history\" or "
        "\"announce\"");
  }
  std::string why;
  for (const auto& [key, value] : j.items())
    if (key != "command" && !field(key, value, r, why)) return bad(why);
  // Without its versions the request cannot say what it reads.
  if (auto* e = std::get_if<EvidenceRequest>(&r); e && (e->evidence == 0 || e->wire == 0))
    return bad("\"evidence\" needs the versions it reads (\"evidence\" and \"wire\")");
  return r;
}

std::string answer_text(const Answer& a) {
  json j = {{"ok", true},
            {"output", a.output},
            {"warnings", a.warnings},
            {"snapshot_age_ms", a.snapshot_age_ms},
            {"exit_code", a.exit_code}};
  return output::dump_json(j, -1);
}

std::string error_text(const std::string& message) {
  return output::dump_json(json{{"ok", false}, {"error", message}}, -1);
}

namespace {

using output::wire::Tape;
using output::wire::Value;

// An ok:true answer, read for its fields; ok:false is the error the daemon gave. An answer is
// read as a tape (output/wire_tape.h): the evidence in it is a megabyte on a large node.
core::Result<Tape> ok_answer(std::string_view text) {
  auto tape = Tape::read(text);
  if (!tape || !tape->root().is_object()) return core::Error{"the answer is not a JSON object", ""};
  const Value j = tape->root();
  auto ok = j.find("ok");
  if (!ok || !ok->is_boolean()) return core::Error{"the answer has no \"ok\"", ""};
  if (!ok->boolean()) {
    auto e = j.find("error");
    return core::Error{e && e->is_string() ? std::string(e->string()) : "no reason given", ""};
  }
  return std::move(*tape);
}

// An integer as JSON's int64 reads it (a larger one wraps negative, and is refused as such).
int64_t int64_of(const Value& v) {
  return v.is_number_unsigned() ? static_cast<int64_t>(v.unsigned_()) : v.integer();
}

}  // namespace

core::Result<Answer> parse_answer(std::string_view text) {
  auto answer = ok_answer(text);
  if (!answer) return answer.error();
  const Value j = answer->root();
  auto out = j.find("output");
  auto warnings = j.find("warnings");
  auto age = j.find("snapshot_age_ms");
  auto code = j.find("exit_code");
  if (!out || !out->is_string() || !warnings || !warnings->is_array() || !age ||
      !age->is_number_integer() || !code || !code->is_number_integer())
    return core::Error{"the answer lacks a field", ""};
  Answer a;
  a.output = std::string(out->string());
  for (Value w : warnings->items()) {
    if (!w.is_string()) return core::Error{"a warning is not a string", ""};
    a.warnings.emplace_back(w.string());
  }
  a.snapshot_age_ms = int64_of(*age);
  int64_t exit_code = int64_of(*code);
  if (a.snapshot_age_ms < 0 || exit_code < 0 || exit_code > 255)
    return core::Error{"the answer's numbers are out of range", ""};
  a.exit_code = static_cast<int>(exit_code);
  return a;
}

std::string evidence_answer_text(std::string_view evidence_wire, bool first_kept,
                                 int64_t snapshot_age_ms,
                                 std::chrono::milliseconds stalled_job_critical_after) {
  // The document dump_json would write (keys in order), with the evidence's text spliced in as
  // it is: a megabyte is not parsed again to be wrapped in a few fields.
  std::string text = R"({"evidence":)";
  text.reserve(evidence_wire.size() + 128);
  text += evidence_wire;
  text += R"(,"first_kept":)";
  text += first_kept ? "true" : "false";
  text += R"(,"ok":true,"snapshot_age_ms":)" + std::to_string(snapshot_age_ms) +
          R"(,"stalled_job_critical_after_ms":)" +
          std::to_string(stalled_job_critical_after.count()) + "}";
  return text;
}

core::Result<EvidenceAnswer> parse_evidence_answer(std::string_view text) {
  std::optional<base::Phase> phase(std::in_place, "daemon answer parsed");
  auto answer = ok_answer(text);
  if (!answer) return answer.error();
  const Value j = answer->root();
  auto age = j.find("snapshot_age_ms");
  auto kept = j.find("first_kept");
  auto critical = j.find("stalled_job_critical_after_ms");
  auto evidence = j.find("evidence");
  if (!age || !age->is_number_unsigned() || !kept || !kept->is_boolean() || !critical ||
      !critical->is_number_unsigned() || !evidence || j.size() != 5)
    return core::Error{"the answer is not the evidence this gpureap reads",
                       "the daemon runs another gpureap version: restart it after an upgrade"};
  phase.emplace("daemon evidence decoded and joined");
  auto e = output::evidence_from_wire(*evidence);
  if (!e) return e.error();
  return EvidenceAnswer{std::move(*e), kept->boolean(), int64_of(*age),
                        std::chrono::milliseconds(int64_of(*critical))};
}

bool is_version_refusal(const core::Error& error) {
  // The daemon called the request bad, or the wire decoders found another version (their hint).
  return error.message.rfind("bad request: ", 0) == 0 ||
         error.hint.find("another gpureap version") != std::string::npos;
}

}  // namespace gpureap::daemon
