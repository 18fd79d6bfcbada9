// The daemon's history made into a page: bands per GPU, the audit log's actions, the final
// closes of GPU files, and the ghosts' table.
#include "report/history_page.h"

#include <algorithm>
#include <map>

#include "text/byte_format.h"

namespace gpureap::report {
namespace {

using std::chrono::milliseconds;

bool gone(const history::ProcessTrack& t) {
  return t.key.start_ticks == 0;  // listed by the driver, absent from /proc
}

// The value a track holds at t: its last change at or before t, while it was seen.
uint64_t value_at(const history::ProcessTrack& t, TimePoint at) {
  if (at < t.first_seen || at > t.last_seen) return 0;
  auto after =
      std::upper_bound(t.points.begin(), t.points.end(), at,
                       [](TimePoint v, const history::ProcessPoint& p) { return v < p.time; });
  if (after == t.points.begin()) return 0;
  return std::prev(after)->used_bytes.value_or(0);
}

std::string process_label(const history::ProcessTrack& t) {
  std::string label = std::to_string(t.key.pid) + " " + (t.comm.empty() ? "?" : t.comm);
  if (!t.user.empty()) label += " (" + t.user + ")";
  if (!t.container.empty()) label += " [" + t.container + "]";
  return label;
}

// The journal says the process is stopped at the end of the window: a paused job that holds
// its memory forever is drawn and labelled as one.
bool stopped_now(const HistoryInput& in, const history::ProcessTrack& t) {
  if (!in.incident) return false;
  return std::any_of(in.incident->lanes.begin(), in.incident->lanes.end(), [&](const auto& l) {
    return l.pid == t.key.pid && l.start_ticks == t.key.start_ticks && l.gpu == t.gpu &&
           l.stopped && l.open;
  });
}

bool is_kill(const audit::Record& r) {
  return r.event == "action" && (r.action == "terminate" || r.action == "kill");
}

bool on_gpu(const audit::Record& r, unsigned gpu) {
  if (r.memory.empty()) return true;
  return std::any_of(r.memory.begin(), r.memory.end(),
                     [&](const audit::GpuMemory& m) { return m.gpu == gpu; });
}

std::string audit_text(const audit::Record& r) {
  if (r.event == "announced" && r.actor) {
    std::string what =
        r.action == "reset" ? "GPU reset" : r.action + " to PID " + std::to_string(r.process.pid);
    if (!r.process.comm.empty() && r.action != "reset") what += " " + r.process.comm;
    return what + " by `" + r.actor->command + "` (" + r.actor->user + ")";
  }
  std::string text = "policy " + r.policy + ": " + r.event + " " + r.action + " PID " +
                     std::to_string(r.process.pid);
  if (!r.process.comm.empty()) text += " " + r.process.comm;
  if (!r.outcome.empty()) text += " → " + r.outcome;
  if (r.released_bytes && *r.released_bytes > 0)
    text += ", " + text::human_bytes(*r.released_bytes) + " released";
  if (!r.enforced && r.event == "decision") text += " (dry run)";
  return text;
}

// Whether a final close by `pid` belongs on `gpu`'s chart: a path does not say which GPU index
// it is (a library's index is not the minor), but the history says where its holder was seen, as a
// process or as a ghost's keeper. A holder the history never saw is drawn on every chart.
bool touches(const HistoryInput& in, pid_t pid, unsigned gpu) {
  bool seen = false;
  for (const auto& t : in.history.processes) {
    bool here =
        t.key.pid == pid || std::any_of(t.keepers.begin(), t.keepers.end(),
                                        [&](const history::Keeper& k) { return k.pid == pid; });
    if (!here) continue;
    if (t.gpu == gpu) return true;
    seen = true;
  }
  return !seen;
}

std::vector<Marker> markers_for(const HistoryInput& in, unsigned gpu, TimePoint from,
                                TimePoint to) {
  std::vector<Marker> out;
  for (const auto& r : in.audit) {
    if (r.event == "records-dropped" || r.time < from || r.time > to || !on_gpu(r, gpu)) continue;
    out.push_back(
        {r.time, is_kill(r) || r.event == "announced" ? MarkerKind::Kill : MarkerKind::PolicyAction,
         audit_text(r)});
  }
  // A close is drawn on the charts of the GPUs its file reaches, as the daemon named them by
  // device number (a CUDA process opens every visible GPU's file: where it was listed says
  // nothing of which file it closed). From a daemon that did not name them, on the GPUs where
  // the history saw its holder. Once per process and moment.
  std::map<std::pair<pid_t, int64_t>, std::vector<std::string>> closes;
  for (const auto& r : in.releases) {
    if (r.at < from || r.at > to) continue;
    const bool here = r.gpus ? std::find(r.gpus->begin(), r.gpus->end(), gpu) != r.gpus->end()
                             : touches(in, r.pid, gpu);
    if (!here) continue;
    auto ms = std::chrono::duration_cast<milliseconds>(r.at.time_since_epoch()).count();
    closes[{r.pid, ms}].push_back(r.path);
  }
  for (const auto& [key, paths] : closes) {
    std::string text = "final close of ";
    for (size_t i = 0; i < paths.size(); ++i) text += (i ? ", " : "") + paths[i];
    text += " (last holder PID " + std::to_string(key.first) + ")";
    out.push_back({TimePoint(milliseconds(key.second)), MarkerKind::Release, text});
  }
  for (const auto& e : in.events)
    if (e.at >= from && e.at <= to) out.push_back(e);
  std::stable_sort(out.begin(), out.end(),
                   [](const Marker& a, const Marker& b) { return a.at < b.at; });
  return out;
}

GpuChart chart_for(const history::GpuSeries& g, const HistoryInput& in, const HistoryPageOptions& o,
                   TimePoint from, TimePoint to) {
  GpuChart c;
  c.gpu = g.gpu;
  const IncidentGpu* id = in.incident ? in.incident->gpu(g.gpu) : nullptr;
  c.title = gpu_heading(g.gpu, id ? id->name : "", g.uuid.empty() && id ? id->uuid : g.uuid);
  c.scale_to_data = true;
  if (in.incident) c.timeline = build_timeline(*in.incident, g.gpu, from, to);
  if (in.incident && in.incident->now)
    for (const auto& now : in.incident->now->gpus) {
      if (now.gpu != g.gpu || now.instances.empty()) continue;
      std::string list;
      for (const auto& i : now.instances) list += (list.empty() ? "" : ", ") + i.words();
      c.split = "Split into instances now: " + list + "; the chart is the whole GPU's memory.";
    }
  c.total_bytes = g.total_bytes;
  c.gap = std::max(milliseconds(3 * std::max<int64_t>(in.history.interval.count(), 1000)),
                   milliseconds(3000));
  std::vector<const history::GpuPoint*> points;
  for (const auto& p : g.points)
    if (p.time >= from && p.time <= to) points.push_back(&p);
  // A day at one sample a second is 86400 columns on a chart 1200 pixels wide: one sample per
  // column of time is drawn, the one with the most memory used (the stack stays a real sample,
  // its peaks stay), and the page stays small.
  constexpr size_t kMaxColumns = 1000;
  if (points.size() > kMaxColumns && to > from) {
    const auto span = std::chrono::duration_cast<milliseconds>(to - from).count();
    std::vector<const history::GpuPoint*> kept;
    int64_t column = -1;
    for (const auto* p : points) {
      const int64_t col =
          std::chrono::duration_cast<milliseconds>(p->time - from).count() * kMaxColumns / span;
      if (col != column) {
        kept.push_back(p);
        column = col;
      } else if (p->used_bytes.value_or(0) > kept.back()->used_bytes.value_or(0)) {
        kept.back() = p;
      }
    }
    points = std::move(kept);
    c.gap = std::max(c.gap, milliseconds(3 * span / static_cast<int64_t>(kMaxColumns)));
  }
  for (const auto* p : points) c.times.push_back(p->time);

  std::vector<const history::ProcessTrack*> live, ghosts;
  for (const auto& t : in.history.processes)
    if (t.gpu == g.gpu) (gone(t) ? ghosts : live).push_back(&t);
  // The largest by memory over time get bands of their own.
  std::vector<std::pair<double, const history::ProcessTrack*>> ranked;
  for (const auto* t : live) {
    double area = 0;
    for (auto at : c.times) area += static_cast<double>(value_at(*t, at));
    if (area > 0) ranked.push_back({area, t});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  const size_t named = std::min(o.named_processes, ranked.size());
  for (size_t i = 0; i < named; ++i) {
    const auto* t = ranked[i].second;
    Band b{BandKind::Process, "pid-" + std::to_string(t->key.pid), process_label(*t), {}};
    if (stopped_now(in, *t)) b.label += " (stopped)";
    for (auto at : c.times) b.bytes.push_back(value_at(*t, at));
    c.bands.push_back(std::move(b));
  }
  Band other{BandKind::Other, "other", "other processes", {}};
  Band ghost{BandKind::Ghost, "ghost", "ghost (gone PIDs, kept by live holders)", {}};
  Band unattributed{BandKind::Unattributed, "unattributed", "unattributed (no process listed)", {}};
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = *points[i];
    const auto at = c.times[i];
    uint64_t rest = 0, gone_sum = 0;
    for (size_t k = named; k < ranked.size(); ++k) rest += value_at(*ranked[k].second, at);
    for (const auto* t : ghosts) gone_sum += value_at(*t, at);
    const uint64_t g_bytes = p.ghost_bytes.value_or(gone_sum);
    const uint64_t u_bytes = p.unattributed_bytes.value_or(0);
    // The driver's used memory is the truth: what no named band holds is "other", also when
    // the history dropped the track of a small process to stay within its bounds; and the stack
    // never rises above it, also when the driver lists more for its processes than it says is
    // used (the named bands, largest first, get what is left after the ghosts).
    uint64_t o_bytes = rest, g_shown = g_bytes, u_shown = u_bytes;
    if (p.used_bytes && p.ghost_bytes && p.unattributed_bytes) {
      u_shown = std::min(u_bytes, *p.used_bytes);
      g_shown = std::min(g_bytes, *p.used_bytes - u_shown);
      uint64_t left = *p.used_bytes - u_shown - g_shown;
      for (size_t k = 0; k < named; ++k) {
        c.bands[k].bytes[i] = std::min(c.bands[k].bytes[i], left);
        left -= c.bands[k].bytes[i];
      }
      o_bytes = left;
    }
    other.bytes.push_back(o_bytes);
    ghost.bytes.push_back(g_shown);
    unattributed.bytes.push_back(u_shown);
  }
  c.bands.push_back(std::move(other));
  c.bands.push_back(std::move(ghost));
  c.bands.push_back(std::move(unattributed));
  c.markers = markers_for(in, g.gpu, from, to);
  return c;
}

std::string utc(TimePoint t) {
  return utc_time(t, true);
}

bool leaked_lane(const HistoryInput& in, const history::ProcessTrack& t) {
  if (!in.incident) return false;
  return std::any_of(in.incident->lanes.begin(), in.incident->lanes.end(), [&](const auto& l) {
    return l.pid == t.key.pid && l.gpu == t.gpu && l.leaked;
  });
}

GhostRow ghost_row(const history::ProcessTrack& t, const HistoryInput& in, TimePoint from,
                   TimePoint series_end) {
  GhostRow row;
  row.pid = t.key.pid;
  row.gpu = t.gpu;
  row.comm = t.comm;
  // The driver gives a gone PID no name: the one it had while alive, when the journal saw it.
  if (in.incident)
    if (auto name = in.incident->name_of(t.key.pid); !name.empty()) row.comm = name;
  for (const auto& k : t.keepers)
    row.keepers.push_back(std::to_string(k.pid) + (k.comm.empty() ? "" : " " + k.comm));
  if (row.keepers.empty() && leaked_lane(in, t)) row.keepers.push_back("nobody (leaked)");
  for (const auto& p : t.points)
    row.peak_bytes = std::max(row.peak_bytes, p.used_bytes.value_or(0));
  row.first_seen = std::max(t.first_seen, from);
  row.last_seen = t.last_seen;
  const auto interval = std::max(in.history.interval, milliseconds(1000));
  if (t.last_seen + interval + interval / 2 >= series_end) {
    row.ending = GhostEnding::StillHeld;
    return row;
  }
  auto involved = [&](pid_t pid) {
    if (pid == t.key.pid) return true;
    return std::any_of(t.keepers.begin(), t.keepers.end(),
                       [&](const history::Keeper& k) { return k.pid == pid; });
  };
  const auto window_end = t.last_seen + std::chrono::minutes(2);
  // Memory back: the first sample of the GPU that no longer lists the ghost.
  std::optional<TimePoint> back;
  for (const auto& g : in.history.gpus)
    if (g.gpu == t.gpu)
      for (const auto& p : g.points)
        if (p.time > t.last_seen) {
          back = p.time;
          break;
        }
  // The last final close by the ghost's keepers before the memory came back.
  std::optional<TimePoint> last_close;
  for (const auto& r : in.releases)
    if (involved(r.pid) && r.at >= t.first_seen && (!back || r.at <= *back) &&
        (!last_close || r.at > *last_close))
      last_close = r.at;
  auto memory_back = [&]() -> std::string {
    if (back && last_close)
      return ", memory back " +
             std::to_string(std::chrono::duration_cast<milliseconds>(*back - *last_close).count()) +
             " ms after the last keeper's final close";
    if (back) return ", memory back by " + utc(*back);
    return "";
  };
  // A gpureap command that announced its signals to the daemon (`kill`, `doctor --fix`, `top`).
  std::vector<pid_t> pids{t.key.pid};
  for (const auto& k : t.keepers) pids.push_back(k.pid);
  if (in.incident)
    if (auto e = announced_signal(*in.incident, pids, t.first_seen - interval, window_end)) {
      row.ending = GhostEnding::EndedByCommand;
      row.ending_detail = "`" + (e->command.empty() ? std::string("gpureap") : e->command) + "`" +
                          (e->user.empty() ? "" : " (" + e->user + ")") + " at " +
                          utc_time(e->at).substr(11) + memory_back();
      return row;
    }
  for (const auto& r : in.audit) {
    if (r.event != "announced" || !r.actor || !involved(r.process.pid)) continue;
    if (r.time + interval < t.first_seen || r.time > window_end) continue;
    row.ending = GhostEnding::EndedByCommand;
    row.ending_detail = "`" + r.actor->command + "` (" + r.actor->user + ") at " +
                        utc_time(r.time).substr(11) + memory_back();
    return row;
  }
  for (const auto& r : in.audit) {
    if (!is_kill(r) || !r.enforced || !involved(r.process.pid)) continue;
    if (r.time + interval < t.first_seen || r.time > window_end) continue;
    row.ending = GhostEnding::KilledByPolicy;
    row.ending_detail = "policy `" + r.policy + "` (" + r.action + " PID " +
                        std::to_string(r.process.pid) + ", " + r.outcome + ") at " + utc(r.time);
    if (r.released_at) row.ending_detail += ", memory freed at " + utc(*r.released_at);
    return row;
  }
  row.ending = GhostEnding::ReleasedOnItsOwn;
  row.ending_detail = "last listed at " + utc(t.last_seen);
  for (const auto& r : in.releases)
    if (involved(r.pid) && r.at >= t.first_seen && r.at <= t.last_seen + std::chrono::minutes(1)) {
      row.ending_detail += "; final close by PID " + std::to_string(r.pid) + " at " + utc(r.at);
      break;
    }
  return row;
}

}  // namespace

Page build_history_page(const HistoryInput& in, const HistoryPageOptions& o) {
  Page page;
  page.generated = o.generated;
  page.title = "GPU memory on " + (in.hostname.empty() ? std::string("this node") : in.hostname);
  // A request reaching back beyond what the daemon keeps would draw mostly nothing: the page
  // starts at the oldest sample, and says so.
  std::optional<TimePoint> oldest;
  for (const auto& g : in.history.gpus)
    if (!g.points.empty() && (!oldest || g.points.front().time < *oldest))
      oldest = g.points.front().time;
  page.from = in.since;
  if (oldest && *oldest > in.since + std::chrono::minutes(1)) {
    page.from = *oldest;
    page.notes.push_back(
        "The daemon's history begins at " + utc_time(*oldest) +
        " UTC (it keeps `history`, in its config, of the past): the page starts there.");
  }
  page.to = page.from;
  for (const auto& g : in.history.gpus)
    if (!g.points.empty()) page.to = std::max(page.to, g.points.back().time);
  for (const auto& t : in.history.processes) page.to = std::max(page.to, t.last_seen);
  if (page.to <= page.from) page.to = std::max(page.from, o.generated);
  if (in.until && *in.until > page.from && *in.until < page.to) page.to = *in.until;
  if (in.incident && in.incident->now && !in.until) page.now = build_now(*in.incident);
  page.subtitle = "from " + utc_time(page.from) + " to " + utc_time(page.to) + " (UTC)";
  for (const auto& g : in.history.gpus) {
    page.gpus.push_back(chart_for(g, in, o, page.from, page.to));
    if (page.gpus.back().times.empty())
      page.notes.push_back("GPU " + std::to_string(g.gpu) + " has no samples in the window.");
  }
  if (in.history.gpus.empty())
    page.notes.push_back("The history has no GPU: the daemon had not sampled one in the window.");
  for (const auto& t : in.history.processes) {
    if (!gone(t) || t.last_seen < page.from || t.first_seen > page.to) continue;
    TimePoint series_end = page.to;
    for (const auto& g : in.history.gpus)
      if (g.gpu == t.gpu && !g.points.empty()) series_end = g.points.back().time;
    page.ghosts.push_back(ghost_row(t, in, page.from, series_end));
  }
  std::stable_sort(
      page.ghosts.begin(), page.ghosts.end(),
      [](const GhostRow& a, const GhostRow& b) { return a.first_seen < b.first_seen; });
  return page;
}

}  // namespace gpureap::report
