#include "daemon/local_protocol.h"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "output/snapshot_json.h"

namespace gpureap::daemon {
namespace {

using nlohmann::json;

// Widths beyond any real terminal are refused rather than rendered into a huge answer.
constexpr size_t kMaxWidth = 10000;
constexpr uint64_t kMaxGpuIndex = 1u << 20;
constexpr uint64_t kMaxPid = 1u << 22;  // the kernel's PID_MAX_LIMIT
// Longer than any settle the daemon keeps samples for: it answers "no sample that old".
constexpr uint64_t kMaxSettleMs = 24ull * 3600 * 1000;

std::optional<output::PsFormat> format_from(std::string_view s) {
  if (s == "table") return output::PsFormat::Table;
  if (s == "json") return output::PsFormat::Json;
  if (s == "csv") return output::PsFormat::Csv;
  return std::nullopt;
}

const char* format_name(output::PsFormat f) {
  switch (f) {
    case output::PsFormat::Json:
      return "json";
    case output::PsFormat::Csv:
      return "csv";
    case output::PsFormat::Table:
      break;
  }
  return "table";
}

core::Error bad(const std::string& what) {
  return {"bad request: " + what, ""};
}

}  // namespace

PsRequest PsRequest::of(const output::PsRenderOptions& o) {
  return {o.format, o.tree, o.width, o.color, o.select, o.compact, o.unicode, o.verbose};
}

output::PsRenderOptions PsRequest::render_options() const {
  output::PsRenderOptions o{.format = format, .tree = tree, .width = width, .color = color};
  o.select = select;
  o.compact = compact;
  o.unicode = unicode;
  o.verbose = verbose;
  return o;
}

std::string default_local_socket() {
  const char* env = std::getenv(kLocalSocketEnv);
  return env ? std::string(env) : std::string(kDefaultLocalSocket);
}

namespace {

// A GPU instance or UUID as a user typed it (core::parse_gpu_ref); longer is none.
constexpr size_t kMaxGpuPlaceBytes = 96;

bool gpu_place_text(const json& value) {
  return value.is_string() && !value.get<std::string>().empty() &&
         value.get<std::string>().size() <= kMaxGpuPlaceBytes;
}

json ps_line(const PsRequest& r) {
  json line = {{"command", "ps"},
               {"format", format_name(r.format)},
               {"tree", r.tree},
               {"width", r.width ? json(*r.width) : json()},
               {"color", r.color},
               {"gpus", r.select.gpus},
               {"users", r.select.users},
               {"pids", r.select.pids},
               {"sort", output::to_string(r.select.sort)},
               {"compact", r.compact},
               {"unicode", r.unicode},
               {"verbose", r.verbose}};
  // Only when given: a daemon older than instances refuses the field, and the command then
  // narrows on its own scan instead of being answered for the whole GPU.
  if (!r.select.gpu_places.empty()) line["gpu_places"] = r.select.gpu_places;
  return line;
}

// A list of numbers from 0 (or 1) to `max`; false with `why` set otherwise.
template <class T>
bool numbers(const std::string& key, const json& value, uint64_t min, uint64_t max,
             std::vector<T>& out, std::string& why) {
  out.clear();
  bool ok = value.is_array();
  if (ok)
    for (const auto& n : value) {
      if (!n.is_number_unsigned() || n.get<uint64_t>() < min || n.get<uint64_t>() > max) {
        ok = false;
        break;
      }
      out.push_back(static_cast<T>(n.get<uint64_t>()));
    }
  if (!ok)
    why = "\"" + key + "\" must be a list of numbers from " + std::to_string(min) + " to " +
          std::to_string(max);
  return ok;
}

json doctor_line(const DoctorRequest& r) {
  json line = {{"command", "doctor"},
               {"json", r.json},
               {"gpu", r.gpu ? json(*r.gpu) : json()},
               {"settle_ms", r.settle.count()},
               {"only", r.only},
               {"unattributed_threshold",
                r.unattributed_threshold ? json(*r.unattributed_threshold) : json()},
               {"color", r.color},
               {"verbose", r.verbose},
               {"width", r.width ? json(*r.width) : json()},
               {"unicode", r.unicode}};
  if (r.gpu_place) line["gpu_place"] = *r.gpu_place;  // as "gpu_places" of ps
  return line;
}

// A request's fields but "command", one by one; false with `why` set on the first bad one.
using FieldReader = bool (*)(const std::string& key, const json& value, Request& r,
                             std::string& why);

bool boolean(const std::string& key, const json& value, bool& out, std::string& why) {
  if (!value.is_boolean()) {
    why = "\"" + key + "\" must be true or false";
    return false;
  }
  out = value.get<bool>();
  return true;
}

bool unknown(const std::string& key, std::string& why) {
  // A newer client's option this daemon cannot honour: the client runs on its own instead.
  why = "unknown field \"" + key + "\"";
  return false;
}

bool width_field(const json& value, std::optional<size_t>& width, std::string& why) {
  if (value.is_null()) {
    width.reset();
    return true;
  }
  if (value.is_number_unsigned() && value.get<uint64_t>() >= 1 &&
      value.get<uint64_t>() <= kMaxWidth) {
    width = static_cast<size_t>(value.get<uint64_t>());
    return true;
  }
  why = "\"width\" must be null or a number of columns from 1 to " + std::to_string(kMaxWidth);
  return false;
}

bool ps_field(const std::string& key, const json& value, Request& request, std::string& why) {
  auto& r = std::get<PsRequest>(request);
  if (key == "format") {
    auto f = value.is_string() ? format_from(value.get<std::string>()) : std::nullopt;
    if (!f) {
      why = "\"format\" must be \"table\", \"json\" or \"csv\"";
      return false;
    }
    r.format = *f;
    return true;
  }
  if (key == "tree") return boolean(key, value, r.tree, why);
  if (key == "color") return boolean(key, value, r.color, why);
  if (key == "compact") return boolean(key, value, r.compact, why);
  if (key == "unicode") return boolean(key, value, r.unicode, why);
  if (key == "verbose") return boolean(key, value, r.verbose, why);
  if (key == "gpus") return numbers(key, value, 0, kMaxGpuIndex, r.select.gpus, why);
  if (key == "pids") return numbers(key, value, 1, kMaxPid, r.select.pids, why);
  if (key == "gpu_places") {
    r.select.gpu_places.clear();
    if (value.is_array())
      for (const auto& p : value)
        if (gpu_place_text(p)) r.select.gpu_places.push_back(p.get<std::string>());
    if (!value.is_array() || r.select.gpu_places.size() != value.size()) {
      why = "\"gpu_places\" must be a list of GPU instances (N/G) or UUIDs";
      return false;
    }
    return true;
  }
  if (key == "users") {
    r.select.users.clear();
    if (value.is_array())
      for (const auto& u : value)
        if (u.is_string()) r.select.users.push_back(u.get<std::string>());
    if (!value.is_array() || r.select.users.size() != value.size()) {
      why = "\"users\" must be a list of user names or uids";
      return false;
    }
    return true;
  }
  if (key == "sort") {
    auto sort = value.is_string() ? output::parse_ps_sort(value.get<std::string>())
                                  : core::Result<output::PsSort>(core::Error{"", ""});
    if (!sort) {
      why = "\"sort\" must be \"pid\", \"memory\", \"age\" or \"user\"";
      return false;
    }
    r.select.sort = *sort;
    return true;
  }
  if (key == "width") return width_field(value, r.width, why);
  return unknown(key, why);
}

bool doctor_field(const std::string& key, const json& value, Request& request, std::string& why) {
  auto& r = std::get<DoctorRequest>(request);
  if (key == "json") return boolean(key, value, r.json, why);
  if (key == "color") return boolean(key, value, r.color, why);
  if (key == "verbose") return boolean(key, value, r.verbose, why);
  if (key == "unicode") return boolean(key, value, r.unicode, why);
  if (key == "width") return width_field(value, r.width, why);
  if (key == "gpu") {
    if (value.is_null()) {
      r.gpu.reset();
      return true;
    }
    if (value.is_number_unsigned() && value.get<uint64_t>() <= kMaxGpuIndex) {
      r.gpu = static_cast<unsigned>(value.get<uint64_t>());
      return true;
    }
    why = "\"gpu\" must be null or a GPU index";
    return false;
  }
  if (key == "gpu_place") {
    if (gpu_place_text(value)) {
      r.gpu_place = value.get<std::string>();
      return true;
    }
    why = "\"gpu_place\" must be a GPU instance (N/G) or a UUID";
    return false;
  }
  if (key == "settle_ms") {
    if (value.is_number_unsigned() && value.get<uint64_t>() <= kMaxSettleMs) {
      r.settle = std::chrono::milliseconds(value.get<uint64_t>());
      return true;
    }
    why = "\"settle_ms\" must be a number of milliseconds up to " + std::to_string(kMaxSettleMs);
    return false;
  }
  if (key == "only") {
    if (!value.is_array()) {
      why = "\"only\" must be a list of finding codes";
      return false;
    }
    r.only.clear();
    for (const auto& code : value) {
      if (!code.is_string()) {
        why = "\"only\" must be a list of finding codes";
        return false;
      }
      r.only.push_back(code.get<std::string>());
    }
    return true;
  }
  if (key == "unattributed_threshold") {
    if (value.is_null()) {
      r.unattributed_threshold.reset();
      return true;
    }
    if (value.is_string()) {
      r.unattributed_threshold = value.get<std::string>();
      return true;
    }
    why = "\"unattributed_threshold\" must be null or a string";
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
        if constexpr (std::is_same_v<T, PsRequest>) return ps_line(r);
        if constexpr (std::is_same_v<T, DoctorRequest>) return doctor_line(r);
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
  if (name == "ps") {
    r = PsRequest{};
    field = ps_field;
  } else if (name == "doctor") {
    r = DoctorRequest{};
    field = doctor_field;
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
        "\"command\" must be \"ps\", \"doctor\", \"snapshot\", \"releases\", \"history\" or "
        "\"announce\"");
  }
  std::string why;
  for (const auto& [key, value] : j.items())
    if (key != "command" && !field(key, value, r, why)) return bad(why);
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

core::Result<Answer> parse_answer(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return core::Error{"the answer is not a JSON object", ""};
  auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean()) return core::Error{"the answer has no \"ok\"", ""};
  if (!ok->get<bool>()) {
    auto e = j.find("error");
    return core::Error{e != j.end() && e->is_string() ? e->get<std::string>() : "no reason given",
                       ""};
  }
  auto out = j.find("output");
  auto warnings = j.find("warnings");
  auto age = j.find("snapshot_age_ms");
  auto code = j.find("exit_code");
  if (out == j.end() || !out->is_string() || warnings == j.end() || !warnings->is_array() ||
      age == j.end() || !age->is_number_integer() || code == j.end() || !code->is_number_integer())
    return core::Error{"the answer lacks a field", ""};
  Answer a;
  a.output = out->get<std::string>();
  for (const auto& w : *warnings) {
    if (!w.is_string()) return core::Error{"a warning is not a string", ""};
    a.warnings.push_back(w.get<std::string>());
  }
  a.snapshot_age_ms = age->get<int64_t>();
  int64_t exit_code = code->get<int64_t>();
  if (a.snapshot_age_ms < 0 || exit_code < 0 || exit_code > 255)
    return core::Error{"the answer's numbers are out of range", ""};
  a.exit_code = static_cast<int>(exit_code);
  return a;
}

}  // namespace gpureap::daemon
