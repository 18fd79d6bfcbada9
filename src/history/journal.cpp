#include "history/journal.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/wait_status.h"

namespace gpureap::history {
namespace journal_detail {

// Where a live row belongs: the GPUs the driver lists it on and those whose ghosts it keeps.
struct Holds {
  std::set<unsigned> listed, kept, reached;
};

Holds holds_of(const core::Snapshot& s, const core::ProcessRow& row) {
  Holds h;
  for (const auto& use : row.gpus) h.listed.insert(use.index);
  for (pid_t gone : row.keeps)
    if (const auto* g = s.ghost(gone))
      for (unsigned gpu : g->gpus) h.kept.insert(gpu);
  if (row.process && row.process->holds_device())
    for (const auto& gpu : s.drivers.gpus)
      if (row.process->holds_gpu(gpu)) h.reached.insert(gpu.index);
  return h;
}

// A distributed job's rank that the daemon saw end (core::RankExit): its exit's words on the
// timeline, "rank 3 of job PID 4200, SIGKILL"; empty for any other process.
std::string rank_exit_text(const core::Snapshot& s, pid_t pid, uint64_t start_ticks) {
  for (auto e = s.proc.rank_exits.rbegin(); e != s.proc.rank_exits.rend(); ++e) {
    if (e->pid != pid || e->start_ticks != start_ticks) continue;
    std::string out = "rank " + (e->local_rank ? std::to_string(*e->local_rank) : "?") +
                      " of job PID " + std::to_string(e->launcher);
    if (e->wait_status) out += ", " + core::wait_status_text(*e->wait_status);
    return out;
  }
  return "";
}

uint64_t bytes_on(const core::ProcessRow& row, unsigned gpu) {
  for (const auto& use : row.gpus)
    if (use.index == gpu) return use.used_bytes.value_or(0);
  return 0;
}

}  // namespace journal_detail

const char* to_string(JournalEventKind kind) {
  switch (kind) {
    case JournalEventKind::Fork:
      return "fork";
    case JournalEventKind::Exit:
      return "exit";
    case JournalEventKind::Ghost:
      return "ghost";
    case JournalEventKind::Leak:
      return "leak";
    case JournalEventKind::Stopped:
      return "stopped";
    case JournalEventKind::Resumed:
      return "resumed";
    case JournalEventKind::Close:
      return "close";
    case JournalEventKind::MemoryBack:
      return "memory-back";
    case JournalEventKind::Signal:
      return "signal";
    case JournalEventKind::Reset:
      return "reset";
    case JournalEventKind::GpuError:
      return "xid";
  }
  return "";  // no enumerator: no name
}

void Journal::set_limits(const JournalLimits& limits) {
  std::lock_guard lock(mutex_);
  limits_ = limits;
}

void Journal::add_event(JournalEvent e) {
  events_.push_back(std::move(e));
  while (events_.size() > limits_.max_events) events_.pop_front();
}

void Journal::record(const core::Snapshot& s, const EventClock& clock) {
  using namespace journal_detail;
  const auto now = s.timestamp;
  std::lock_guard lock(mutex_);
  // An event's moment is believed only between the sample before and this one: a PID handed
  // out again, or an event the previous sample already saw, keeps the sample's time.
  const auto previous = last_record_;
  last_record_ = now;
  auto between = [&](std::optional<JournalTime> at,
                     JournalTime after) -> std::optional<JournalTime> {
    if (!at || *at > now || *at <= after) return std::nullopt;
    return at;
  };
  std::set<LaneKey> seen;
  // The lanes open before this sample, by PID and GPU: a child's parent, a gone PID's live past.
  std::map<std::pair<pid_t, unsigned>, LaneKey> open_by_pid;
  for (const auto& [key, lane] : lanes_)
    if (lane.open) open_by_pid[{lane.pid, lane.gpu}] = key;

  for (const auto& row : s.rows) {
    if (!row.process || row.process->stat.is_zombie()) {
      // Gone (or a zombie, which holds nothing) and listed: the ghost's lane continues the
      // live one, under the name it had, also when a sample fell between its death and this.
      for (const auto& use : row.gpus) {
        LaneKey key{row.pid, 0, use.index};
        if (auto it = open_by_pid.find({row.pid, use.index}); it != open_by_pid.end()) {
          key = it->second;
        } else {
          const JournalLane* recent = nullptr;
          for (const auto& [k, lane] : lanes_)
            if (lane.pid == row.pid && lane.gpu == use.index && lane.listed && !lane.ghost &&
                now - lane.last_seen < std::chrono::seconds(30) &&
                (!recent || lane.last_seen > recent->last_seen)) {
              recent = &lane;
              key = k;
            }
        }
        auto [it, added] = lanes_.try_emplace(key);
        JournalLane& lane = it->second;
        if (added) {
          lane.pid = row.pid;
          lane.gpu = use.index;
          lane.first_seen = now;
          auto name = names_.find(row.pid);
          lane.comm = name != names_.end() ? name->second : row.driver_name.value_or("");
        }
        lane.listed = true;
        lane.open = true;
        lane.last_seen = now;
        lane.peak_bytes = std::max(lane.peak_bytes, use.used_bytes.value_or(0));
        if (!lane.exited) {
          lane.exited = now;
          JournalEvent e{now, JournalEventKind::Exit, use.index, row.pid};
          e.text = rank_exit_text(s, row.pid, lane.start_ticks);
          if (!added) add_event(std::move(e));
        }
        if (!lane.ghost) {
          lane.ghost = now;
          add_event(
              {now, JournalEventKind::Ghost, use.index, row.pid, 0, use.used_bytes.value_or(0)});
        }
        const auto* ghost = s.ghost(row.pid);
        if (ghost && ghost->leaked && !lane.leaked) {
          lane.leaked = true;
          add_event(
              {now, JournalEventKind::Leak, use.index, row.pid, 0, use.used_bytes.value_or(0)});
        }
        seen.insert(key);
      }
      continue;
    }
    const auto& stat = row.process->stat;
    auto h = holds_of(s, row);
    std::set<unsigned> gpus = h.listed;
    gpus.insert(h.kept.begin(), h.kept.end());
    // A holder whose files reach a GPU where its parent has a lane: a forked worker, followed
    // from its first sample rather than from the moment its parent dies.
    for (unsigned gpu : h.reached)
      if (open_by_pid.count({stat.ppid, gpu}) || lanes_.count({row.pid, stat.start_ticks, gpu}))
        gpus.insert(gpu);
    if (gpus.empty()) continue;
    names_[row.pid] = stat.comm;
    for (unsigned gpu : gpus) {
      LaneKey key{row.pid, stat.start_ticks, gpu};
      auto [it, added] = lanes_.try_emplace(key);
      JournalLane& lane = it->second;
      if (added) {
        lane.pid = row.pid;
        lane.start_ticks = stat.start_ticks;
        lane.gpu = gpu;
        lane.ppid = stat.ppid;
        lane.first_seen = now;
        if (previous && clock.began)
          if (auto at = between(clock.began(row.pid), *previous)) lane.first_seen = *at;
        if (row.process->details && row.process->details->user)
          lane.user = *row.process->details->user;
        if (open_by_pid.count({stat.ppid, gpu}) && !h.listed.count(gpu))
          add_event({lane.first_seen, JournalEventKind::Fork, gpu, stat.ppid, row.pid});
      }
      lane.comm = stat.comm;
      lane.listed = lane.listed || h.listed.count(gpu);
      lane.keeper = lane.keeper || h.kept.count(gpu);
      lane.open = true;
      lane.last_seen = now;
      lane.peak_bytes = std::max(lane.peak_bytes, bytes_on(row, gpu));
      if (stat.is_stopped() != lane.stopped && !(added && !stat.is_stopped()))
        add_event({now, stat.is_stopped() ? JournalEventKind::Stopped : JournalEventKind::Resumed,
                   gpu, row.pid});
      lane.stopped = stat.is_stopped();
      seen.insert(key);
    }
  }
  // Lanes no longer seen end here: an exit, a final close, or a ghost's memory given back.
  for (auto& [key, lane] : lanes_) {
    if (!lane.open || seen.count(key)) continue;
    lane.open = false;
    const auto* now_there = s.find(lane.pid);
    const bool alive = std::get<1>(key) != 0 && now_there && !now_there->stat.is_zombie() &&
                       now_there->stat.start_ticks == std::get<1>(key);
    if (lane.ghost) {
      add_event({now, JournalEventKind::MemoryBack, lane.gpu, lane.pid, 0, lane.peak_bytes});
      continue;
    }
    // A live holder's lane ends at its final close where the kernel's events say when.
    auto ended = now;
    if (clock.released)
      if (auto at = between(clock.released(lane.pid), lane.last_seen)) ended = lane.last_seen = *at;
    if (!alive) {
      lane.exited = ended;
      JournalEvent e{ended, JournalEventKind::Exit, lane.gpu, lane.pid};
      e.text = rank_exit_text(s, lane.pid, std::get<1>(key));
      add_event(std::move(e));
    } else {
      add_event({ended, JournalEventKind::Close, lane.gpu, lane.pid});
    }
  }
  trim(now);
}

void Journal::announce(const Announcement& a) {
  std::lock_guard lock(mutex_);
  auto base = [&](JournalEventKind kind) {
    JournalEvent e{a.at, kind};
    e.uid = a.uid;
    e.user = a.user;
    e.command = a.command;
    e.reason = a.reason;
    e.text = a.signal;
    return e;
  };
  if (a.signal == "reset") {
    auto e = base(JournalEventKind::Reset);
    e.gpu = a.gpu;
    add_event(std::move(e));
    return;
  }
  for (const auto& t : a.targets) {
    auto e = base(JournalEventKind::Signal);
    e.pid = t.pid;
    e.gpu = t.gpu;
    add_event(std::move(e));
  }
}

void Journal::record_kernel_events(const std::vector<core::KernelGpuEvent>& events) {
  std::lock_guard lock(mutex_);
  for (const auto& k : events) {
    if (k.seq <= kernel_seq_ && kernel_seq_ != 0) continue;
    kernel_seq_ = std::max(kernel_seq_, k.seq);
    // Only a time that can be this boot's has a place on its timeline.
    if (!k.time || k.stamp == core::KernelStamp::Future) continue;
    JournalEvent e{*k.time, JournalEventKind::GpuError, k.gpu, k.pid.value_or(0)};
    e.text = k.code_text();  // as the vendor's parser writes it
    if (k.name) e.text += " (" + *k.name + ")";
    if (k.process_name) e.command = *k.process_name;
    add_event(std::move(e));
  }
}

void Journal::trim(JournalTime now) {
  const auto cut = now - limits_.window;
  std::erase_if(lanes_,
                [&](const auto& kv) { return !kv.second.open && kv.second.last_seen < cut; });
  while (!events_.empty() && events_.front().at < cut) events_.pop_front();
  if (lanes_.size() > limits_.max_lanes) {
    // The longest closed go first; open lanes stay (they are what is on the GPUs now).
    std::vector<std::pair<JournalTime, LaneKey>> closed;
    for (const auto& [key, lane] : lanes_)
      if (!lane.open) closed.push_back({lane.last_seen, key});
    std::sort(closed.begin(), closed.end());
    for (size_t i = 0; i < closed.size() && lanes_.size() > limits_.max_lanes; ++i)
      lanes_.erase(closed[i].second);
  }
  if (names_.size() > 2 * limits_.max_lanes) {
    std::set<pid_t> keep;
    for (const auto& [key, lane] : lanes_) keep.insert(lane.pid);
    std::erase_if(names_, [&](const auto& kv) { return !keep.count(kv.first); });
  }
}

JournalView Journal::query(JournalTime since, JournalTime until) const {
  std::lock_guard lock(mutex_);
  JournalView v;
  for (const auto& [key, lane] : lanes_)
    if (lane.last_seen >= since && lane.first_seen <= until) v.lanes.push_back(lane);
  std::stable_sort(v.lanes.begin(), v.lanes.end(), [](const auto& a, const auto& b) {
    return std::tie(a.gpu, a.first_seen, a.pid) < std::tie(b.gpu, b.first_seen, b.pid);
  });
  for (const auto& e : events_)
    if (e.at >= since && e.at <= until) v.events.push_back(e);
  std::stable_sort(v.events.begin(), v.events.end(),
                   [](const auto& a, const auto& b) { return a.at < b.at; });
  return v;
}

}  // namespace gpureap::history
