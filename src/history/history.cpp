#include "history/history.h"

#include <algorithm>

#include "core/row_labels.h"

namespace gpureap::history {
namespace {

using std::chrono::milliseconds;

int64_t to_ms(TimePoint t) {
  return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
}
TimePoint from_ms(int64_t ms) {
  return TimePoint(milliseconds(ms));
}

uint64_t pack(const std::optional<uint64_t>& v) {
  return v ? std::min(*v, UINT64_MAX - 1) : UINT64_MAX;
}
uint16_t pack(const std::optional<unsigned>& v) {
  return v ? static_cast<uint16_t>(std::min(*v, 0xFFFEu)) : UINT16_MAX;
}
std::optional<uint64_t> unpack(uint64_t v) {
  return v == UINT64_MAX ? std::nullopt : std::optional(v);
}
std::optional<unsigned> unpack(uint16_t v) {
  return v == UINT16_MAX ? std::nullopt : std::optional<unsigned>(v);
}

// A ghost's keepers are a handful; a runaway fork bomb must not grow a track without bound.
constexpr size_t kMaxKeepersPerTrack = 16;

void note_keepers(std::vector<Keeper>& keepers, const core::Snapshot& s, pid_t gone) {
  for (const auto& ghost : s.ghosts) {
    if (ghost.pid != gone) continue;
    for (pid_t pid : ghost.keepers) {
      const auto* row = s.row(pid);
      Keeper k{pid, row && row->process ? row->process->stat.comm : ""};
      auto same = std::find_if(keepers.begin(), keepers.end(),
                               [&](const auto& old) { return old.pid == pid; });
      if (same != keepers.end())
        *same = k;
      else if (keepers.size() < kMaxKeepersPerTrack)
        keepers.push_back(k);
    }
  }
}

// A process point costs this little below which the budget is not split further: a track
// always keeps its recent changes.
constexpr size_t kMinPointsPerTrack = 16;

}  // namespace

ProcessKey process_key(const core::ProcessRow& row) {
  return {row.pid, row.process ? row.process->stat.start_ticks : 0};
}

History::History(HistoryLimits limits) : limits_(limits) {}

HistoryLimits History::limits() const {
  std::lock_guard lock(mutex_);
  return limits_;
}

size_t History::samples_per_series() const {
  auto interval = std::max<int64_t>(limits_.interval.count(), 1);
  return static_cast<size_t>(std::max<int64_t>(limits_.window.count() / interval, 0)) + 2;
}

void History::set_limits(const HistoryLimits& limits) {
  std::lock_guard lock(mutex_);
  limits_ = limits;
  for (auto& [_, g] : gpus_) g.samples.set_max_size(samples_per_series());
  if (latest_ms_) trim(latest_ms_);
  enforce_process_bounds();
}

void History::record(const core::Snapshot& s) {
  const int64_t now = to_ms(s.timestamp);
  std::lock_guard lock(mutex_);
  latest_ms_ = std::max(latest_ms_, now);
  const size_t per_series = samples_per_series();
  const int64_t interval = std::max<int64_t>(limits_.interval.count(), 1);
  // The grid's slot of a time (floor division: times before 1970 stay on the grid too).
  auto slot = [interval](int64_t t) { return t / interval - (t % interval < 0 ? 1 : 0); };
  for (const auto& g : s.drivers.gpus) {
    auto [it, added] =
        gpus_.try_emplace(g.index, GpuTrack{"", std::nullopt, Ring<GpuSample>(per_series)});
    auto& track = it->second;
    track.uuid = g.uuid.value_or("");
    if (g.memory.total_bytes) track.total = g.memory.total_bytes;
    auto summary = s.memory_summary(g);
    GpuSample sample;
    sample.t_ms = now;
    sample.used = pack(g.memory.used_bytes);
    sample.unattributed = pack(summary.unattributed_bytes);
    if (!g.processes_error) sample.ghost = summary.ghost_bytes;
    sample.util = pack(g.utilization_percent);
    unsigned listed = 0;
    for (const auto& r : s.rows)
      for (const auto& u : r.gpus) listed += u.index == g.index;
    sample.processes = static_cast<uint16_t>(std::min(listed, 0xFFFFu));
    // A second sample in the slot is the slot's latest value, not a point of its own.
    if (!track.samples.empty() && slot(track.samples.back().t_ms) == slot(now) &&
        track.samples.back().t_ms <= now)
      track.samples.back() = sample;
    else
      track.samples.push_back(sample);
  }

  // A process absent for longer than this was not watched in between: mark the gap, so no
  // duration condition ever spans it.
  const int64_t gap_ms = 3 * std::max<int64_t>(limits_.interval.count(), 1);
  for (const auto& row : s.rows) {
    for (const auto& use : row.gpus) {
      TrackKey key{process_key(row), use.index};
      auto [it, added] = tracks_.try_emplace(key);
      Track& t = it->second;
      if (added) {
        t.first_seen_ms = now;
        t.samples = Ring<ProcessSample>(per_series);
      }
      t.comm = row.process ? row.process->stat.comm : row.driver_name.value_or("");
      t.user = core::user_label(row);
      t.container = core::container_label(row);
      if (!row.process) note_keepers(t.keepers, s, row.pid);
      ProcessSample sample{now, pack(use.used_bytes), pack(use.sm_utilization_percent)};
      size_t before = t.samples.size();
      if (!added && now - t.last_seen_ms > gap_ms)
        t.samples.push_back({t.last_seen_ms + limits_.interval.count(), UINT64_MAX, UINT16_MAX});
      const bool same = !t.samples.empty() && t.samples.back().used == sample.used &&
                        t.samples.back().sm_util == sample.sm_util;
      // A change within the slot of the track's latest point (not its first) replaces that
      // point's value, keeping its time: one point per slot, whatever the sample rate. Back to
      // the value before it, the point goes.
      const bool in_slot = !added && t.samples.size() >= 2 &&
                           slot(t.samples.back().t_ms) == slot(now) && t.samples.back().t_ms <= now;
      if (!same && in_slot) {
        const auto& prior = t.samples[t.samples.size() - 2];
        if (prior.used == sample.used && prior.sm_util == sample.sm_util) {
          t.samples.pop_back();  // counted below, with what was added
        } else {
          t.samples.back().used = sample.used;
          t.samples.back().sm_util = sample.sm_util;
        }
      } else if (!same) {
        t.samples.push_back(sample);
      }
      process_points_ += t.samples.size() - before;
      t.last_seen_ms = now;
    }
  }
  trim(now);
  enforce_process_bounds();
}

void History::trim(int64_t now_ms) {
  const int64_t cutoff = now_ms - limits_.window.count();
  for (auto& [_, g] : gpus_)
    while (!g.samples.empty() && g.samples.front().t_ms < cutoff) g.samples.pop_front();
  std::erase_if(gpus_, [](const auto& kv) { return kv.second.samples.empty(); });
  for (auto it = tracks_.begin(); it != tracks_.end();) {
    Track& t = it->second;
    if (t.last_seen_ms < cutoff) {
      process_points_ -= t.samples.size();
      it = tracks_.erase(it);
      continue;
    }
    // The point holding at the cutoff stays: it is the value at the window's start.
    while (t.samples.size() >= 2 && t.samples[1].t_ms <= cutoff) {
      t.samples.pop_front();
      --process_points_;
    }
    ++it;
  }
}

void History::enforce_process_bounds() {
  while (tracks_.size() > std::max<size_t>(limits_.max_processes, 1)) {
    auto oldest = std::min_element(
        tracks_.begin(), tracks_.end(),
        [](const auto& a, const auto& b) { return a.second.last_seen_ms < b.second.last_seen_ms; });
    process_points_ -= oldest->second.samples.size();
    tracks_.erase(oldest);
  }
  if (tracks_.empty()) return;
  const size_t share = std::max(kMinPointsPerTrack, limits_.max_process_points / tracks_.size());
  const size_t cap = std::min(samples_per_series(), share);
  for (auto& [_, t] : tracks_) {
    if (t.samples.max_size() == cap) continue;
    size_t before = t.samples.size();
    t.samples.set_max_size(cap);
    process_points_ -= before - t.samples.size();
  }
}

HistoryView History::query(const HistoryQuery& q) const {
  std::lock_guard lock(mutex_);
  HistoryView view;
  view.window = limits_.window;
  view.interval = limits_.interval;
  const int64_t since = to_ms(q.since);
  for (const auto& [index, g] : gpus_) {
    if (q.gpu && *q.gpu != index) continue;
    GpuSeries series{index, g.uuid, g.total, {}};
    for (size_t i = 0; i < g.samples.size(); ++i) {
      const auto& p = g.samples[i];
      if (p.t_ms < since) continue;
      series.points.push_back({from_ms(p.t_ms), unpack(p.used), unpack(p.unattributed),
                               unpack(p.ghost), unpack(p.util), p.processes});
    }
    view.gpus.push_back(std::move(series));
  }
  for (const auto& [key, t] : tracks_) {
    if ((q.gpu && *q.gpu != key.second) || t.last_seen_ms < since) continue;
    ProcessTrack track{key.first,
                       key.second,
                       t.comm,
                       t.user,
                       t.container,
                       from_ms(t.first_seen_ms),
                       from_ms(t.last_seen_ms),
                       {},
                       t.keepers};
    for (size_t i = 0; i < t.samples.size(); ++i) {
      const auto& p = t.samples[i];
      // The last point before `since` is the value that held then.
      bool holds_at_since = i + 1 < t.samples.size() && t.samples[i + 1].t_ms > since;
      if (p.t_ms < since && !holds_at_since && i + 1 != t.samples.size()) continue;
      track.points.push_back({from_ms(p.t_ms), unpack(p.used), unpack(p.sm_util)});
    }
    view.processes.push_back(std::move(track));
  }
  return view;
}

std::optional<TimePoint> History::below_since(const ProcessKey& key, unsigned gpu,
                                              unsigned below_percent) const {
  std::lock_guard lock(mutex_);
  auto it = tracks_.find({key, gpu});
  if (it == tracks_.end() || it->second.samples.empty()) return std::nullopt;
  const Track& t = it->second;
  // Only a process seen in the latest sample can be idle now.
  if (t.last_seen_ms < latest_ms_) return std::nullopt;
  std::optional<int64_t> since;
  for (size_t i = t.samples.size(); i-- > 0;) {
    const auto& p = t.samples[i];
    if (p.sm_util == UINT16_MAX || p.sm_util >= below_percent) break;
    since = p.t_ms;
  }
  if (!since) return std::nullopt;
  return from_ms(*since);
}

size_t History::process_points() const {
  std::lock_guard lock(mutex_);
  return process_points_;
}

}  // namespace gpureap::history
