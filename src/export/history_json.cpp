#include "export/history_json.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "core/duration.h"
#include "text/escape.h"
#include "text/rfc3339.h"

namespace gpureap::exporter {
namespace {

using nlohmann::json;

double unix_seconds(history::TimePoint t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  return static_cast<double>(ms) / 1000.0;
}

template <class T>
json maybe(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json ratio(const std::optional<unsigned>& percent) {
  return percent ? json(*percent / 100.0) : json(nullptr);
}

core::Error since_error(std::string_view text) {
  return {"cannot read since=\"" + text::utf8_valid(text) + "\"",
          "write a duration ago (10m, 1h), a Unix time in seconds, or an RFC 3339 time "
          "(2024-05-01T12:00:00Z)"};
}

}  // namespace

json history_to_json(const history::HistoryView& view, const std::string& hostname,
                     history::TimePoint since) {
  json gpus = json::array();
  for (const auto& g : view.gpus) {
    json points = json::array();
    for (const auto& p : g.points)
      points.push_back({{"time", unix_seconds(p.time)},
                        {"memory_used_bytes", maybe(p.used_bytes)},
                        {"memory_unattributed_bytes", maybe(p.unattributed_bytes)},
                        {"memory_ghost_bytes", maybe(p.ghost_bytes)},
                        {"utilization_ratio", ratio(p.utilization_percent)},
                        {"processes", p.processes}});
    gpus.push_back({{"gpu", g.gpu},
                    {"uuid", text::utf8_valid(g.uuid)},
                    {"memory_total_bytes", maybe(g.total_bytes)},
                    {"samples", points}});
  }
  json processes = json::array();
  for (const auto& t : view.processes) {
    json points = json::array();
    for (const auto& p : t.points)
      points.push_back({{"time", unix_seconds(p.time)},
                        {"memory_bytes", maybe(p.used_bytes)},
                        {"sm_utilization_ratio", ratio(p.sm_utilization_percent)}});
    json keepers = json::array();
    for (const auto& k : t.keepers)
      keepers.push_back({{"pid", k.pid}, {"comm", text::utf8_valid(k.comm)}});
    processes.push_back({{"pid", t.key.pid},
                         {"start_ticks", t.key.start_ticks},
                         {"gpu", t.gpu},
                         {"comm", text::utf8_valid(t.comm)},
                         {"user", text::utf8_valid(t.user)},
                         {"container", text::utf8_valid(t.container)},
                         {"first_seen", unix_seconds(t.first_seen)},
                         {"last_seen", unix_seconds(t.last_seen)},
                         {"changes", points},
                         {"keepers", keepers}});
  }
  return {{"schema", kHistorySchema},
          {"hostname", text::utf8_valid(hostname)},
          {"since", unix_seconds(since)},
          {"window_seconds", view.window.count() / 1000.0},
          {"interval_seconds", view.interval.count() / 1000.0},
          {"gpus", gpus},
          {"processes", processes}};
}

core::Result<history::TimePoint> parse_since(std::string_view text, history::TimePoint now) {
  if (text.empty()) return since_error(text);
  if (auto t = text::parse_rfc3339(text)) return *t;
  if (text.find('T') != std::string_view::npos && text.find('-') != std::string_view::npos)
    return since_error(text);  // meant as a time, but not one
  if (std::isalpha(static_cast<unsigned char>(text.back()))) {
    auto ago = core::parse_duration(text);
    if (!ago) return since_error(text);
    return now - std::chrono::duration_cast<history::TimePoint::duration>(*ago);
  }
  double secs = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), secs);
  // A TimePoint counts nanoseconds in 64 bits: a time after 2262 does not fit in one.
  constexpr double kMaxSeconds = static_cast<double>(
      std::chrono::duration_cast<std::chrono::seconds>(history::TimePoint::duration::max())
          .count());
  if (ec != std::errc() || ptr != text.data() + text.size() || secs < 0 || !std::isfinite(secs) ||
      secs > kMaxSeconds)
    return since_error(text);
  return history::TimePoint(
      std::chrono::milliseconds(static_cast<long long>(std::llround(secs * 1000))));
}

}  // namespace gpureap::exporter
