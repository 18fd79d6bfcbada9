#include "history/history_document.h"

#include <cmath>
#include <limits>

#include "core/field_count.h"
#include "history/json_fields.h"
#include "text/escape.h"
#include "text/rfc3339.h"
#include "text/time_format.h"

namespace gpureap::history {
namespace {

using nlohmann::json;
using namespace json_fields;

// Every struct the document carries, with the number of fields encoded and decoded below: a
// field added to one of them fails the build here until it is carried both ways (and the
// round-trip test sets it).
template <class T, std::size_t N>
constexpr bool carried = core::field_count<T>() == N;
static_assert(carried<GpuPoint, 6>, "a GpuPoint field is not written or read by the document");
static_assert(carried<GpuSeries, 4>, "a GpuSeries field is not written or read by the document");
static_assert(carried<ProcessPoint, 3>, "a ProcessPoint field is not in the document");
static_assert(carried<ProcessKey, 2>, "a ProcessKey field is not written or read by the document");
static_assert(carried<Keeper, 2>, "a Keeper field is not written or read by the document");
static_assert(carried<ProcessTrack, 9>, "a ProcessTrack field is not in the document");
static_assert(carried<HistoryView, 4>,
              "a HistoryView field is not written or read by the document");
static_assert(carried<Release, 4>, "a Release field is not written or read by the document");
static_assert(carried<HistoryDocument, 4>, "a HistoryDocument field is not in the document");

// ---- writing ----

json ratio(const std::optional<unsigned>& percent) {
  return percent ? json(*percent / 100.0) : json(nullptr);
}

json gpu_json(const GpuSeries& g) {
  json points = json::array();
  for (const auto& p : g.points)
    points.push_back({{"time", unix_seconds(p.time)},
                      {"memory_used_bytes", maybe(p.used_bytes)},
                      {"memory_unattributed_bytes", maybe(p.unattributed_bytes)},
                      {"memory_ghost_bytes", maybe(p.ghost_bytes)},
                      {"utilization_ratio", ratio(p.utilization_percent)},
                      {"processes", p.processes}});
  return {{"gpu", g.gpu},
          {"uuid", text::utf8_valid(g.uuid)},
          {"memory_total_bytes", maybe(g.total_bytes)},
          {"samples", points}};
}

json track_json(const ProcessTrack& t) {
  json points = json::array();
  for (const auto& p : t.points)
    points.push_back({{"time", unix_seconds(p.time)},
                      {"memory_bytes", maybe(p.used_bytes)},
                      {"sm_utilization_ratio", ratio(p.sm_utilization_percent)}});
  json keepers = json::array();
  for (const auto& k : t.keepers)
    keepers.push_back({{"pid", k.pid}, {"comm", text::utf8_valid(k.comm)}});
  return {{"pid", t.key.pid},
          {"start_ticks", t.key.start_ticks},
          {"gpu", t.gpu},
          {"comm", text::utf8_valid(t.comm)},
          {"user", text::utf8_valid(t.user)},
          {"container", text::utf8_valid(t.container)},
          {"first_seen", unix_seconds(t.first_seen)},
          {"last_seen", unix_seconds(t.last_seen)},
          {"changes", points},
          {"keepers", keepers}};
}

// ---- reading ----

std::chrono::milliseconds seconds_of(const json& v, const std::string& where) {
  if (v.is_null()) return std::chrono::milliseconds(0);
  if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() < 1e9))
    throw Malformed{where + " is not a number of seconds"};
  return std::chrono::milliseconds(std::llround(v.get<double>() * 1000));
}

std::optional<unsigned> percent_of(const json& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 655))
    throw Malformed{where + " is not a ratio"};
  return static_cast<unsigned>(std::llround(v.get<double>() * 100));
}

GpuSeries gpu_from(const json& g, const std::string& where) {
  GpuSeries s;
  s.gpu = integer_of<unsigned>(field(g, "gpu", where), at(where, "gpu"));
  s.uuid = string_of(optional_field(g, "uuid"), at(where, "uuid"));
  s.total_bytes =
      bytes_of(optional_field(g, "memory_total_bytes"), at(where, "memory_total_bytes"));
  size_t i = 0;
  for (const auto& p : list_of(field(g, "samples", where), at(where, "samples"))) {
    std::string here = item(where, "samples", i++);
    GpuPoint point;
    point.time = time_of(field(p, "time", here), at(here, "time"));
    point.used_bytes =
        bytes_of(optional_field(p, "memory_used_bytes"), at(here, "memory_used_bytes"));
    point.unattributed_bytes = bytes_of(optional_field(p, "memory_unattributed_bytes"),
                                        at(here, "memory_unattributed_bytes"));
    point.ghost_bytes =
        bytes_of(optional_field(p, "memory_ghost_bytes"), at(here, "memory_ghost_bytes"));
    point.utilization_percent =
        percent_of(optional_field(p, "utilization_ratio"), at(here, "utilization_ratio"));
    const json& processes = optional_field(p, "processes");
    point.processes =
        processes.is_null() ? 0 : integer_of<unsigned>(processes, at(here, "processes"));
    s.points.push_back(point);
  }
  return s;
}

ProcessTrack track_from(const json& t, const std::string& where) {
  ProcessTrack track;
  track.key.pid = integer_of<pid_t>(field(t, "pid", where), at(where, "pid"));
  track.key.start_ticks =
      integer_of<uint64_t>(field(t, "start_ticks", where), at(where, "start_ticks"));
  track.gpu = integer_of<unsigned>(field(t, "gpu", where), at(where, "gpu"));
  track.comm = string_of(optional_field(t, "comm"), at(where, "comm"));
  track.user = string_of(optional_field(t, "user"), at(where, "user"));
  track.container = string_of(optional_field(t, "container"), at(where, "container"));
  track.first_seen = time_of(field(t, "first_seen", where), at(where, "first_seen"));
  track.last_seen = time_of(field(t, "last_seen", where), at(where, "last_seen"));
  size_t i = 0;
  for (const auto& p : list_of(field(t, "changes", where), at(where, "changes"))) {
    std::string here = item(where, "changes", i++);
    track.points.push_back(
        {time_of(field(p, "time", here), at(here, "time")),
         bytes_of(optional_field(p, "memory_bytes"), at(here, "memory_bytes")),
         percent_of(optional_field(p, "sm_utilization_ratio"), at(here, "sm_utilization_ratio"))});
  }
  // Older daemons name no keepers.
  if (const json& keepers = optional_field(t, "keepers"); !keepers.is_null()) {
    i = 0;
    for (const auto& k : list_of(keepers, at(where, "keepers"))) {
      std::string here = item(where, "keepers", i++);
      track.keepers.push_back({integer_of<pid_t>(field(k, "pid", here), at(here, "pid")),
                               string_of(optional_field(k, "comm"), at(here, "comm"))});
    }
  }
  return track;
}

std::vector<Release> releases_from(const json& list, const std::string& where) {
  std::vector<Release> out;
  size_t i = 0;
  for (const auto& r : list_of(list, where)) {
    std::string here = where + "[" + std::to_string(i++) + "]";
    Release release;
    release.path = string_of(field(r, "path", here), at(here, "path"));
    release.pid = integer_of<pid_t>(field(r, "pid", here), at(here, "pid"));
    const json& when = field(r, "at", here);
    auto time = when.is_string() ? text::parse_rfc3339(when.get<std::string>()) : std::nullopt;
    if (!time) throw Malformed{at(here, "at") + " is not an RFC 3339 time"};
    release.at = *time;
    // Older daemons name no GPUs: not known, which is not "none".
    if (const json& gpus = optional_field(r, "gpus"); !gpus.is_null()) {
      release.gpus.emplace();
      size_t g = 0;
      for (const auto& index : list_of(gpus, at(here, "gpus")))
        release.gpus->push_back(integer_of<unsigned>(index, item(here, "gpus", g++)));
    }
    out.push_back(std::move(release));
  }
  return out;
}

core::Error malformed(const std::string& what) {
  return {"the history is not a " + std::string(kHistorySchema) +
              " document: " + text::terminal_safe(what),
          "give the file /api/v1/history returned, unchanged"};
}

}  // namespace

nlohmann::json releases_to_json(const std::vector<Release>& releases) {
  json list = json::array();
  for (const auto& r : releases) {
    json one = {
        {"path", text::utf8_valid(r.path)}, {"pid", r.pid}, {"at", text::iso8601_utc(r.at)}};
    if (r.gpus) one["gpus"] = *r.gpus;
    list.push_back(std::move(one));
  }
  return list;
}

json history_to_json(const HistoryDocument& d) {
  json gpus = json::array();
  for (const auto& g : d.view.gpus) gpus.push_back(gpu_json(g));
  json processes = json::array();
  for (const auto& t : d.view.processes) processes.push_back(track_json(t));
  return {{"schema", kHistorySchema},
          {"hostname", text::utf8_valid(d.hostname)},
          {"since", unix_seconds(d.since)},
          {"window_seconds", d.view.window.count() / 1000.0},
          {"interval_seconds", d.view.interval.count() / 1000.0},
          {"gpus", gpus},
          {"processes", processes},
          {"releases", releases_to_json(d.releases)}};
}

core::Result<HistoryDocument> history_from_json(const json& doc) {
  try {
    std::string schema = doc.is_object() && doc.contains("schema") && doc["schema"].is_string()
                             ? doc["schema"].get<std::string>()
                             : "";
    if (schema != kHistorySchema)
      throw Malformed{"its schema is \"" + schema + "\", not \"" + kHistorySchema + "\""};
    HistoryDocument d;
    d.hostname = string_of(optional_field(doc, "hostname"), "hostname");
    d.since = time_of(field(doc, "since", ""), "since");
    d.view.window = seconds_of(optional_field(doc, "window_seconds"), "window_seconds");
    d.view.interval = seconds_of(optional_field(doc, "interval_seconds"), "interval_seconds");
    size_t i = 0;
    for (const auto& g : list_of(field(doc, "gpus", ""), "gpus"))
      d.view.gpus.push_back(gpu_from(g, item("", "gpus", i++)));
    i = 0;
    for (const auto& t : list_of(field(doc, "processes", ""), "processes"))
      d.view.processes.push_back(track_from(t, item("", "processes", i++)));
    // Daemons that follow no holder events, and older ones, send no releases.
    if (const json& releases = optional_field(doc, "releases"); !releases.is_null())
      d.releases = releases_from(releases, "releases");
    return d;
  } catch (const Malformed& m) {
    return malformed(m.what);
  } catch (const json::exception& e) {
    return malformed(e.what());
  }
}

core::Result<std::vector<Release>> releases_from_json(const json& releases) {
  try {
    return releases_from(releases, "releases");
  } catch (const Malformed& m) {
    return core::Error{"the daemon's releases cannot be read: " + text::terminal_safe(m.what),
                       "run the daemon and this command from the same gpureap version"};
  }
}

}  // namespace gpureap::history
