#include "daemon/ps_protocol.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "output/snapshot_json.h"

namespace gpureap::daemon {
namespace {

using nlohmann::json;

// Widths beyond any real terminal are refused rather than rendered into a huge answer.
constexpr size_t kMaxWidth = 10000;

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

std::string default_local_socket() {
  const char* env = std::getenv(kLocalSocketEnv);
  return env ? std::string(env) : std::string(kDefaultLocalSocket);
}

std::string request_line(const PsRequest& r) {
  json j = {{"command", "ps"},
            {"format", format_name(r.format)},
            {"tree", r.tree},
            {"width", r.width ? json(*r.width) : json()},
            {"color", r.color}};
  return j.dump() + "\n";
}

core::Result<PsRequest> parse_request(std::string_view line) {
  if (line.size() > kMaxRequestBytes)
    return bad("longer than " + std::to_string(kMaxRequestBytes) + " bytes");
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  json j = json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded()) return bad("not JSON");
  if (!j.is_object()) return bad("not a JSON object");
  PsRequest r;
  bool command = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "command") {
      if (!value.is_string() || value.get<std::string>() != "ps")
        return bad("\"command\" must be \"ps\"");
      command = true;
    } else if (key == "format") {
      auto f = value.is_string() ? format_from(value.get<std::string>()) : std::nullopt;
      if (!f) return bad("\"format\" must be \"table\", \"json\" or \"csv\"");
      r.format = *f;
    } else if (key == "tree" || key == "color") {
      if (!value.is_boolean()) return bad("\"" + key + "\" must be true or false");
      (key == "tree" ? r.tree : r.color) = value.get<bool>();
    } else if (key == "width") {
      if (value.is_null()) {
        r.width.reset();
      } else if (value.is_number_unsigned() && value.get<uint64_t>() >= 1 &&
                 value.get<uint64_t>() <= kMaxWidth) {
        r.width = static_cast<size_t>(value.get<uint64_t>());
      } else {
        return bad("\"width\" must be null or a number of columns from 1 to " +
                   std::to_string(kMaxWidth));
      }
    } else {
      // A newer client's option this daemon cannot honour: it scans on its own instead.
      return bad("unknown field \"" + key + "\"");
    }
  }
  if (!command) return bad("no \"command\"");
  return r;
}

std::string answer_text(const PsAnswer& a) {
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

core::Result<PsAnswer> parse_answer(std::string_view text) {
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
  PsAnswer a;
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
