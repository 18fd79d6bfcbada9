// Reading a gpureap.history/v1 document back: the daemon's answer, or a copy a user saved.
#include <limits>
#include <nlohmann/json.hpp>

#include "export/history_json.h"
#include "report/history_page.h"
#include "text/escape.h"
#include "text/rfc3339.h"

namespace gpureap::report {
namespace {

using nlohmann::json;

// A malformed document throws this inside the parser; the boundary turns it into an Error.
struct Malformed {
  std::string what;
};

const json& field(const json& object, const char* name, const std::string& where) {
  if (!object.is_object()) throw Malformed{where + " is not an object"};
  auto it = object.find(name);
  if (it == object.end()) throw Malformed{where + " has no \"" + name + "\""};
  return *it;
}

TimePoint time_of(const json& v, const std::string& where) {
  if (!v.is_number()) throw Malformed{where + " is not a time in Unix seconds"};
  double secs = v.get<double>();
  if (!(secs >= 0 && secs < 1e11)) throw Malformed{where + " is not a time in Unix seconds"};
  return TimePoint(std::chrono::milliseconds(static_cast<int64_t>(secs * 1000 + 0.5)));
}

std::optional<uint64_t> bytes_of(const json& object, const char* name, const std::string& where) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
    throw Malformed{where + "." + name + " is not a byte count"};
  return it->get<uint64_t>();
}

std::optional<unsigned> percent_of(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  double r = it->get<double>();
  if (!(r >= 0 && r <= 655)) return std::nullopt;
  return static_cast<unsigned>(r * 100 + 0.5);
}

std::string string_of(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

template <class T>
T integer_of(const json& v, const std::string& where) {
  if (!v.is_number_integer()) throw Malformed{where + " is not an integer"};
  auto n = v.get<int64_t>();
  if (n < 0 || static_cast<uint64_t>(n) > static_cast<uint64_t>(std::numeric_limits<T>::max()))
    throw Malformed{where + " is out of range"};
  return static_cast<T>(n);
}

const json& array_field(const json& object, const char* name, const std::string& where) {
  const json& a = field(object, name, where);
  if (!a.is_array()) throw Malformed{where + "." + name + " is not a list"};
  return a;
}

history::GpuSeries gpu_series(const json& g, const std::string& where) {
  history::GpuSeries s;
  s.gpu = integer_of<unsigned>(field(g, "gpu", where), where + ".gpu");
  s.uuid = string_of(g, "uuid");
  s.total_bytes = bytes_of(g, "memory_total_bytes", where);
  size_t i = 0;
  for (const auto& p : array_field(g, "samples", where)) {
    std::string at = where + ".samples[" + std::to_string(i++) + "]";
    history::GpuPoint point;
    point.time = time_of(field(p, "time", at), at + ".time");
    point.used_bytes = bytes_of(p, "memory_used_bytes", at);
    point.unattributed_bytes = bytes_of(p, "memory_unattributed_bytes", at);
    point.ghost_bytes = bytes_of(p, "memory_ghost_bytes", at);
    point.utilization_percent = percent_of(p, "utilization_ratio");
    s.points.push_back(point);
  }
  return s;
}

history::ProcessTrack process_track(const json& t, const std::string& where) {
  history::ProcessTrack track;
  track.key.pid = integer_of<pid_t>(field(t, "pid", where), where + ".pid");
  track.key.start_ticks =
      integer_of<uint64_t>(field(t, "start_ticks", where), where + ".start_ticks");
  track.gpu = integer_of<unsigned>(field(t, "gpu", where), where + ".gpu");
  track.comm = string_of(t, "comm");
  track.user = string_of(t, "user");
  track.container = string_of(t, "container");
  track.first_seen = time_of(field(t, "first_seen", where), where + ".first_seen");
  track.last_seen = time_of(field(t, "last_seen", where), where + ".last_seen");
  size_t i = 0;
  for (const auto& p : array_field(t, "changes", where)) {
    std::string at = where + ".changes[" + std::to_string(i++) + "]";
    track.points.push_back({time_of(field(p, "time", at), at + ".time"),
                            bytes_of(p, "memory_bytes", at),
                            percent_of(p, "sm_utilization_ratio")});
  }
  // Older daemons name no keepers.
  if (auto k = t.find("keepers"); k != t.end() && k->is_array())
    for (const auto& keeper : *k)
      if (keeper.is_object() && keeper.contains("pid") && keeper["pid"].is_number_integer())
        track.keepers.push_back({keeper["pid"].get<pid_t>(), string_of(keeper, "comm")});
  return track;
}

// Releases as /api/v1/history writes them: {"path", "pid", "at": RFC 3339, "gpus": [N]} (older
// daemons name no GPUs).
std::vector<FileRelease> releases(const json& doc) {
  std::vector<FileRelease> out;
  auto it = doc.find("releases");
  if (it == doc.end() || !it->is_array()) return out;
  for (const auto& r : *it) {
    if (!r.is_object() || !r.contains("at") || !r["at"].is_string()) continue;
    auto at = text::parse_rfc3339(r["at"].get<std::string>());
    if (!at) continue;
    FileRelease release{string_of(r, "path"), 0, *at};
    if (r.contains("pid") && r["pid"].is_number_integer()) release.pid = r["pid"].get<pid_t>();
    if (auto g = r.find("gpus"); g != r.end() && g->is_array()) {
      release.gpus.emplace();
      for (const auto& index : *g)
        if (index.is_number_unsigned() && index.get<uint64_t>() <= UINT32_MAX)
          release.gpus->push_back(index.get<unsigned>());
    }
    out.push_back(std::move(release));
  }
  return out;
}

}  // namespace

core::Result<HistoryInput> parse_history_document(std::string_view text) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded())
    return core::Error{"the history is not JSON",
                       "give the file /api/v1/history returned, e.g. curl -o history.json "
                       "'http://127.0.0.1:9842/api/v1/history?since=6h'"};
  try {
    auto schema = doc.is_object() ? string_of(doc, "schema") : "";
    if (schema != exporter::kHistorySchema)
      throw Malformed{"its schema is \"" + schema + "\", not \"" + exporter::kHistorySchema + "\""};
    HistoryInput in;
    in.hostname = string_of(doc, "hostname");
    in.since = time_of(field(doc, "since", "the document"), "since");
    auto seconds = [&](const char* name) {
      auto it = doc.find(name);
      return std::chrono::milliseconds(it != doc.end() && it->is_number() &&
                                               it->get<double>() >= 0 && it->get<double>() < 1e9
                                           ? static_cast<int64_t>(it->get<double>() * 1000)
                                           : 0);
    };
    in.history.window = seconds("window_seconds");
    in.history.interval = seconds("interval_seconds");
    size_t i = 0;
    for (const auto& g : array_field(doc, "gpus", "the document"))
      in.history.gpus.push_back(gpu_series(g, "gpus[" + std::to_string(i++) + "]"));
    i = 0;
    for (const auto& t : array_field(doc, "processes", "the document"))
      in.history.processes.push_back(process_track(t, "processes[" + std::to_string(i++) + "]"));
    in.releases = releases(doc);
    // Daemons that keep the incident journal add it; older ones and saved copies may not.
    if (auto it = doc.find("incident"); it != doc.end() && !it->is_null()) {
      auto incident = parse_incident(*it);
      if (!incident)
        return core::Error{text::terminal_safe(incident.error().message), incident.error().hint};
      in.incident = std::move(*incident);
    }
    return in;
  } catch (const Malformed& m) {
    return core::Error{
        "the history is not a gpureap.history/v1 document: " + text::terminal_safe(m.what),
        "give the file /api/v1/history returned, unchanged"};
  } catch (const json::exception& e) {
    return core::Error{std::string("the history cannot be read: ") + e.what(),
                       "give the file /api/v1/history returned, unchanged"};
  }
}

}  // namespace gpureap::report
