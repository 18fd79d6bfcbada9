// The daemon's incident journal read back, and made into the page's timelines and now box.
#include "report/incident.h"

#include <algorithm>

#include "history/journal_document.h"
#include "history/json_fields.h"
#include "text/byte_format.h"
#include "text/escape.h"

namespace gpureap::report {
namespace incident_detail {

using nlohmann::json;

// The strict reader of the history's documents (history/json_fields.h), for the parts of the
// `incident` object the journal's codec does not read: the GPUs' names and the state now.
using namespace history::json_fields;

template <class T>
T whole(const json& o, const char* name, const std::string& where) {
  return integer_of<T>(field(o, name, where), history::json_fields::at(where, name));
}

template <class T>
std::optional<T> maybe_whole(const json& o, const char* name, const std::string& where) {
  const json& v = optional_field(o, name);
  if (v.is_null()) return std::nullopt;
  return integer_of<T>(v, history::json_fields::at(where, name));
}

std::string words(const json& o, const char* name, const std::string& where, bool required) {
  return string_of(required ? field(o, name, where) : optional_field(o, name),
                   history::json_fields::at(where, name));
}

const json& list(const json& o, const char* name, const std::string& where) {
  return list_of(field(o, name, where), history::json_fields::at(where, name));
}

IncidentNow now_of(const json& n) {
  IncidentNow out;
  out.at = time_of(field(n, "time", "incident.now"), "incident.now.time");
  size_t i = 0;
  for (const auto& g : list(n, "gpus", "incident.now")) {
    std::string at = "incident.now.gpus[" + std::to_string(i++) + "]";
    IncidentNowGpu x;
    x.gpu = whole<unsigned>(g, "gpu", at);
    x.state = words(g, "state", at, true);
    x.used_bytes = maybe_whole<uint64_t>(g, "used_bytes", at);
    x.total_bytes = maybe_whole<uint64_t>(g, "total_bytes", at);
    x.unattributed_bytes = maybe_whole<uint64_t>(g, "unattributed_bytes", at);
    x.attributed_bytes = maybe_whole<uint64_t>(g, "attributed_bytes", at).value_or(0);
    x.ghost_bytes = maybe_whole<uint64_t>(g, "ghost_bytes", at).value_or(0);
    x.leaked_bytes = maybe_whole<uint64_t>(g, "leaked_bytes", at).value_or(0);
    if (auto it = g.find("stopped"); it != g.end() && it->is_array())
      for (const auto& p : *it)
        if (p.is_number_integer() && p.get<int64_t>() > 0) x.stopped.push_back(p.get<pid_t>());
    // Absent from a daemon of before instances: none.
    if (g.contains("instances")) {
      size_t k = 0;
      for (const auto& v : list(g, "instances", at)) {
        std::string where = at + ".instances[" + std::to_string(k++) + "]";
        x.instances.push_back({words(v, "instance", where, true), words(v, "label", where, false),
                               maybe_whole<uint64_t>(v, "used_bytes", where),
                               maybe_whole<uint64_t>(v, "total_bytes", where)});
      }
    }
    out.gpus.push_back(std::move(x));
  }
  i = 0;
  for (const auto& p : list(n, "problems", "incident.now")) {
    std::string at = "incident.now.problems[" + std::to_string(i++) + "]";
    out.problems.push_back({words(p, "severity", at, true), words(p, "summary", at, true),
                            words(p, "command", at, false)});
  }
  return out;
}

Incident incident_of(const json& j) {
  Incident in;
  size_t i = 0;
  for (const auto& g : list(j, "gpus", "incident")) {
    std::string at = "incident.gpus[" + std::to_string(i++) + "]";
    in.gpus.push_back({whole<unsigned>(g, "gpu", at), words(g, "name", at, false),
                       words(g, "uuid", at, false), maybe_whole<uint64_t>(g, "total_bytes", at)});
  }
  if (auto it = j.find("now"); it != j.end() && !it->is_null()) in.now = now_of(*it);
  return in;
}

std::string clock_of(TimePoint t) {
  return utc_time(t).substr(11);  // "14:02:11"
}

std::string who(const IncidentEvent& e) {
  std::string by = e.command.empty() ? std::string("a gpureap command") : "`" + e.command + "`";
  if (!e.user.empty()) by += " (" + e.user + ")";
  return by;
}

std::string lane_label(const IncidentLane& l) {
  std::string label = std::to_string(l.pid) + " " + (l.comm.empty() ? "?" : l.comm);
  if (!l.user.empty()) label += " (" + l.user + ")";
  return label;
}

std::string mark_text(const IncidentEvent& e) {
  using K = history::JournalEventKind;
  const std::string at = " at " + utc_time(e.at, true);
  const std::string pid = "PID " + std::to_string(e.pid);
  switch (e.kind) {
    case K::Fork:
      return pid + " forked PID " + std::to_string(e.other) + at;
    case K::Exit:
      return pid + " exited" + (e.text.empty() ? std::string() : " (" + e.text + ")") + at;
    case K::Ghost:
      return pid + " is gone but the driver still lists it (a ghost" +
             (e.bytes ? ", " + text::human_bytes(e.bytes) : std::string()) + ")" + at;
    case K::Leak:
      return pid + " is leaked: nothing alive holds its memory" + at;
    case K::Stopped:
      return pid + " was stopped" + at;
    case K::Resumed:
      return pid + " runs again" + at;
    case K::Close:
      return pid + " let go of the GPU's files" + at;
    case K::MemoryBack:
      return "the driver freed " + pid + "'s memory" +
             (e.bytes ? " (" + text::human_bytes(e.bytes) + ")" : std::string()) + at;
    case K::Signal:
      return e.text + " to " + pid + " by " + who(e) + at +
             (e.reason.empty() ? std::string() : ": " + e.reason);
    case K::Reset:
      return "GPU reset by " + who(e) + at;
    case K::GpuError:
      return e.text + (e.pid ? " naming " + pid : std::string()) + at;
  }
  return e.text + at;
}

}  // namespace incident_detail

const IncidentGpu* Incident::gpu(unsigned index) const {
  for (const auto& g : gpus)
    if (g.gpu == index) return &g;
  return nullptr;
}

std::string Incident::name_of(pid_t pid) const {
  for (const auto& l : lanes)
    if (l.pid == pid && !l.comm.empty()) return l.comm;
  return "";
}

core::Result<Incident> parse_incident(const nlohmann::json& j) {
  auto journal = history::journal_from_json(j);
  if (!journal) return journal.error();
  try {
    auto in = incident_detail::incident_of(j);
    in.lanes = std::move(journal->lanes);
    in.events = std::move(journal->events);
    return in;
  } catch (const history::json_fields::Malformed& m) {
    return core::Error{"the history's " + text::terminal_safe(m.what),
                       "save the daemon's /api/v1/history again"};
  } catch (const nlohmann::json::exception& e) {
    return core::Error{std::string("the history's incident is malformed: ") + e.what(), ""};
  }
}

std::string short_uuid(const std::string& uuid) {
  // "GPU-8f3a2c1e-..." → "GPU-8f3a2c1e"; anything else keeps its first 12 characters.
  auto dash = uuid.find('-', 4);
  if (uuid.rfind("GPU-", 0) == 0 && dash != std::string::npos) return uuid.substr(0, dash);
  return uuid.substr(0, 12);
}

std::string gpu_heading(unsigned gpu, const std::string& name, const std::string& uuid) {
  std::string s = "GPU " + std::to_string(gpu);
  if (!name.empty()) s += " · " + name;
  if (!uuid.empty()) s += " · " + short_uuid(uuid);
  return s;
}

Timeline build_timeline(const Incident& in, unsigned gpu, TimePoint from, TimePoint to) {
  using namespace incident_detail;
  constexpr size_t kMaxLanes = 40;  // per GPU; the rest are counted
  Timeline t;
  std::vector<const IncidentLane*> lanes;
  for (const auto& l : in.lanes)
    if (l.gpu == gpu && l.last_seen >= from && l.first_seen <= to) lanes.push_back(&l);
  // The lanes that explain the most first: ghosts and their keepers, stopped holders, then
  // by memory; shown in the order they began.
  auto weight = [](const IncidentLane* l) {
    return (l->ghost || l->keeper ? 4 : 0) + (l->stopped ? 2 : 0) + (l->listed ? 1 : 0);
  };
  if (lanes.size() > kMaxLanes) {
    std::stable_sort(lanes.begin(), lanes.end(), [&](auto* a, auto* b) {
      return std::make_pair(weight(a), a->peak_bytes) > std::make_pair(weight(b), b->peak_bytes);
    });
    t.lanes_left_out = lanes.size() - kMaxLanes;
    lanes.resize(kMaxLanes);
  }
  std::stable_sort(lanes.begin(), lanes.end(), [](auto* a, auto* b) {
    return std::tie(a->first_seen, a->pid) < std::tie(b->first_seen, b->pid);
  });
  for (const auto* l : lanes) {
    Lane lane;
    lane.pid = l->pid;
    lane.label = lane_label(*l);
    lane.leaked = l->leaked;
    lane.stopped_now = l->stopped && l->open;
    lane.still_open = l->open;
    const TimePoint begin = std::max(l->first_seen, from);
    const TimePoint end = std::min(l->open ? to : l->last_seen, to);
    // Alive until it became a ghost, stopped between its stop and resume events.
    TimePoint alive_end = l->ghost ? std::min(*l->ghost, end) : end;
    std::vector<std::pair<TimePoint, bool>> stops;  // (time, stopped)
    for (const auto& e : in.events)
      if (e.pid == l->pid && (!e.gpu || *e.gpu == gpu) && e.at >= l->first_seen &&
          e.at <= l->last_seen + std::chrono::seconds(1) &&
          (e.kind == history::JournalEventKind::Stopped ||
           e.kind == history::JournalEventKind::Resumed))
        stops.push_back({e.at, e.kind == history::JournalEventKind::Stopped});
    TimePoint cursor = begin;
    bool stopped = false;
    for (const auto& [at, now_stopped] : stops) {
      const TimePoint x = std::clamp(at, begin, alive_end);
      if (now_stopped == stopped) continue;
      if (x > cursor)
        lane.spans.push_back({cursor, x, stopped ? SpanKind::Stopped : SpanKind::Alive});
      cursor = x;
      stopped = now_stopped;
    }
    if (l->stopped && l->open) stopped = true;
    if (alive_end > cursor || lane.spans.empty())
      lane.spans.push_back(
          {cursor, std::max(cursor, alive_end), stopped ? SpanKind::Stopped : SpanKind::Alive});
    if (l->ghost && end > *l->ghost)
      lane.spans.push_back({std::max(*l->ghost, begin), end, SpanKind::Ghost});
    std::string title =
        lane.label + ": held GPU " + std::to_string(gpu) + " from " + utc_time(l->first_seen, true);
    if (l->ghost) title += "; gone (a ghost) from " + utc_time(*l->ghost, true);
    if (l->leaked) title += "; leaked: kept by nobody";
    if (!l->open) title += "; until " + utc_time(l->last_seen, true);
    if (lane.stopped_now) title += "; stopped now";
    if (l->peak_bytes) title += "; at most " + text::human_bytes(l->peak_bytes) + " listed";
    lane.title = title;
    for (const auto& e : in.events) {
      // A fork is on both lanes: the parent's, and the child's, where it begins.
      const bool mine =
          e.pid == l->pid || (e.kind == history::JournalEventKind::Fork && e.other == l->pid);
      if (!mine || (e.gpu && *e.gpu != gpu) || e.at < from || e.at > to) continue;
      if (e.at + std::chrono::seconds(1) < l->first_seen ||
          (!l->open && e.at > l->last_seen + std::chrono::seconds(5)))
        continue;
      lane.marks.push_back({e.at, e.kind, mark_text(e)});
    }
    t.lanes.push_back(std::move(lane));
  }
  for (const auto& e : in.events) {
    if (e.at < from || e.at > to) continue;
    if (!(e.kind == history::JournalEventKind::Reset ||
          (e.kind == history::JournalEventKind::GpuError && e.pid == 0)))
      continue;
    if (e.gpu && *e.gpu != gpu) continue;
    t.gpu_marks.push_back({e.at, e.kind, mark_text(e)});
  }
  return t;
}

NowBox build_now(const Incident& in) {
  NowBox box;
  if (!in.now) return box;
  box.at = in.now->at;
  for (const auto& g : in.now->gpus) {
    NowGpu x;
    x.gpu = g.gpu;
    const auto* id = in.gpu(g.gpu);
    x.heading = id ? gpu_heading(g.gpu, id->name, "") : "GPU " + std::to_string(g.gpu);
    x.state = g.state;
    std::string d;
    if (g.used_bytes) d = text::human_bytes(*g.used_bytes) + " used";
    if (g.total_bytes) d += (d.empty() ? "" : " of ") + text::human_bytes(*g.total_bytes);
    std::vector<std::string> parts;
    if (g.attributed_bytes) parts.push_back(text::human_bytes(g.attributed_bytes) + " attributed");
    if (g.ghost_bytes > g.leaked_bytes)
      parts.push_back(text::human_bytes(g.ghost_bytes - g.leaked_bytes) + " ghost");
    if (g.leaked_bytes) parts.push_back(text::human_bytes(g.leaked_bytes) + " leaked (nobody)");
    if (g.unattributed_bytes && *g.unattributed_bytes)
      parts.push_back(text::human_bytes(*g.unattributed_bytes) + " unattributed");
    for (size_t i = 0; i < parts.size(); ++i) d += (i ? ", " : (d.empty() ? "" : ": ")) + parts[i];
    if (!g.stopped.empty()) {
      d += "; stopped holder" + std::string(g.stopped.size() == 1 ? " " : "s ");
      for (size_t i = 0; i < g.stopped.size(); ++i)
        d += (i ? ", " : "") + std::to_string(g.stopped[i]);
    }
    x.detail = d;
    for (const auto& i : g.instances) {
      std::string line = i.words();
      if (i.used_bytes || i.total_bytes) line += ":";
      if (i.used_bytes) line += " " + text::human_bytes(*i.used_bytes) + " used";
      if (i.total_bytes) line += (i.used_bytes ? " of " : " ") + text::human_bytes(*i.total_bytes);
      x.instances.push_back(std::move(line));
    }
    box.gpus.push_back(std::move(x));
  }
  box.problems = in.now->problems;
  return box;
}

std::optional<IncidentEvent> announced_signal(const Incident& in, const std::vector<pid_t>& pids,
                                              TimePoint from, TimePoint until) {
  std::optional<IncidentEvent> found;
  for (const auto& e : in.events)
    if (e.kind == history::JournalEventKind::Signal && e.at >= from && e.at <= until &&
        std::find(pids.begin(), pids.end(), e.pid) != pids.end() && (!found || e.at <= found->at))
      found = e;
  return found;
}

}  // namespace gpureap::report
