#include "daemon/holder_book.h"

#include <algorithm>

#include "daemon/process_exit.h"
#include "engine/listed_since.h"

namespace gpureap::daemon {
namespace {

// Bounds a map of processes under a storm of many: its older half (by `time_of` its value)
// goes at once, so this costs a sort per half its size of new processes, not one per event.
template <class Map, class TimeOf>
void drop_older_half(Map& map, TimeOf time_of) {
  std::vector<decltype(time_of(map.begin()->second))> times;
  times.reserve(map.size());
  for (const auto& kv : map) times.push_back(time_of(kv.second));
  auto middle = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
  std::nth_element(times.begin(), middle, times.end());
  const auto cut = *middle;
  std::erase_if(map, [&](const auto& kv) { return time_of(kv.second) < cut; });
}

}  // namespace

HolderBook::Rechecked HolderBook::recheck_unconfirmed(std::chrono::steady_clock::time_point now) {
  Rechecked out;
  for (const auto& [pid, e] : unconfirmed_.due(now)) {
    out.changed = recheck(pid, e) || out.changed;
    // Still running (if still followed): the next check comes later, and none after the last
    // delay until an event.
    unconfirmed_.still_running(pid, e.checks, now);
  }
  out.next = unconfirmed_.next();
  return out;
}

void HolderBook::on_files(track::FanotifyWatch::Batch batch) {
  for (auto& e : batch.events) {
    read_again(e.pid);
    if (e.kind == track::FileEvent::Kind::Open) {
      ++counters_.opens;
      revouch(e.pid);  // its beginning is not an ended process's
      holders_.insert(e.pid);
      note_open(e.pid, e.path);
      note_beginning(e.pid, e.at);
      check_dropped_forks(e.pid);
      claim_recent_forks(e.pid);
      if (ended_before_read(e.pid)) exited_unseen(e.pid);
      continue;
    }
    ++counters_.closes;
    if (auto it = unconfirmed_opens_.find(e.pid); it != unconfirmed_opens_.end()) {
      it->second.paths.erase(e.path);
      if (it->second.paths.empty()) unconfirmed_opens_.erase(it);
    }
    releases_.push_back({std::move(e.path), e.pid, e.at});
    if (releases_.size() > kKeptReleases) releases_.pop_front();
  }
  // Opens and closes lost lose no exit: the numbers recorded are still vouched for.
  if (batch.overflow) {
    ++counters_.overflows;
    lost_ = true;
  }
}

bool HolderBook::on_procs(const track::ProcEvents::Batch& batch) {
  // Lost forks may be lost holders: only a full scan knows. The batch's events may come from
  // before the loss or after it, in an order it does not keep: each is taken as one after it
  // (the numbers recorded before are unvouched first), and what they record as one before it
  // (unvouched again after them).
  if (batch.overflow) exits_lost();
  bool changed = false;
  for (const auto& e : batch.events) {
    switch (e.kind) {
      case track::ProcEvent::Kind::Fork:
        // What was recorded of the number's previous process ended with it (its exit came
        // first): a late open under the number is this one's.
        recent_forks_.handed_out(e.pid);
        dropped_fork_parents_.erase(e.pid);
        changed = number_reused(e.pid) || changed;
        changed = revouch(e.parent) || changed;
        // The child inherits the holder's fds: no open event, so it must be scanned.
        if (!holders_.count(e.parent)) {
          remember_fork(e.pid, e.parent);
          continue;
        }
        add_forked_holder(e.pid, e.parent, std::chrono::system_clock::now());
        read_again(e.pid);
        changed = true;
        break;
      case track::ProcEvent::Kind::Exit:
        recent_forks_.exited(e.pid);
        changed = on_exit(e.pid, e.wait_status, batch.boot_ticks(e)) || changed;
        break;
      case track::ProcEvent::Kind::ThreadExit:
        // Any thread's exit may be the end of a process whose leader ended before it.
        if (unconfirmed_.contains(e.pid))
          changed = on_exit(e.pid, e.wait_status, batch.boot_ticks(e)) || changed;
        break;
    }
  }
  if (batch.overflow) {
    ++counters_.overflows;
    ++exit_losses_;
    lost_ = changed = true;
    exits_lost();
  }
  return changed;
}

// A lost exit may leave a number that is handed out next among the records: of parents (and
// of recent forks, whose parents' opens claim their children) none is kept past a loss; every
// other number is unvouched. An unconfirmed end is checked at once by its start time
// (daemon/unconfirmed_ends.h).
void HolderBook::exits_lost() {
  auto unvouch = [&](pid_t pid) { unvouched_.try_emplace(pid, known_start(pid)); };
  for (pid_t pid : holders_) unvouch(pid);
  for (const auto& kv : scanned_starts_) unvouch(kv.first);
  for (const auto& kv : began_) unvouch(kv.first);
  for (const auto& kv : unconfirmed_opens_) unvouch(kv.first);
  for (pid_t pid : unconfirmed_.pids()) unvouch(pid);
  for (const auto& [child, parent] : forked_by_) {
    unvouch(child);
    unvouch(parent);
  }
  forked_by_.clear();
  exited_parents_.clear();
  parent_starts_.clear();
  recent_forks_.clear();
  unconfirmed_.events_lost(std::chrono::steady_clock::now());
}

bool HolderBook::revouch(pid_t pid) {
  auto it = unvouched_.find(pid);
  if (it == unvouched_.end()) return false;
  const std::optional<uint64_t> start = it->second;
  auto now = proc_.read_stat(pid);
  if (!now) return false;  // unreadable: cannot tell
  if (*now && start && (*now)->start_ticks == *start) {
    unvouched_.erase(it);  // the same process: events name it again
    return false;
  }
  if (*now && !start) return false;  // a process, the recorded one or not: cannot tell
  forget_process(pid, start);
  return true;
}

bool HolderBook::number_reused(pid_t child) {
  if (!unvouched_.count(child)) {
    // Without a loss the exit of what had the number came first (and forgot it): a record
    // left with a start time is one the kernel's order of events does not explain, or the
    // child's own (a scan read it before its fork was read), which /proc tells apart.
    const std::optional<uint64_t> start = known_start(child);
    if (!start) return false;
    unvouched_.emplace(child, start);
  }
  if (!revouch(child)) return false;
  exited(child);  // its children, if it had any followed, were reparented
  recent_exits_.erase(child);
  return true;
}

bool HolderBook::forget_process(pid_t pid, std::optional<uint64_t> start) {
  unvouched_.erase(pid);
  const bool holder = holders_.erase(pid) > 0;
  began_.erase(pid);
  unconfirmed_.forget(pid);
  unconfirmed_opens_.erase(pid);
  // Its start time is nobody's now; one read since the loss (a parent's at its fork, a scan's
  // re-read) is the number's new process's, and stays.
  const bool in_view = scanned_starts_.count(pid) > 0;
  forget_scanned_start(pid, start);
  if (start)
    if (auto it = parent_starts_.find(pid); it != parent_starts_.end() && it->second == *start)
      parent_starts_.erase(it);
  // The view may still have it: the engine reads the number again.
  if (in_view) exited_.insert(pid);
  if (holder) read_again(pid);
  return holder || in_view;
}

bool HolderBook::on_exit(pid_t pid, std::optional<int> wait_status, uint64_t at_ticks) {
  // After a loss the number may be another process's than the one recorded: /proc tells, or
  // nothing is recorded of it (below).
  const bool forgot = revouch(pid);
  // The exit is of the newest process known under the number that had started by then (what is
  // known of it is kept until /proc confirms). A start time is rounded down to its clock tick:
  // one in the exit's own tick may be the exit's process, and only one in a later tick started
  // after it. Every process known under the number started later: the exit is of one before.
  const auto start = known_start(pid, at_ticks);
  if (!start && known_start(pid)) return exit_before_start(pid) || forgot;
  return settle_exit(pid, wait_status, start, at_ticks) || forgot;
}

bool HolderBook::recheck(pid_t pid, const UnconfirmedEnds::End& end) {
  const bool forgot = revouch(pid);
  if (!unconfirmed_.contains(pid)) return forgot;  // forgotten with the number's process
  // The entry's own start time, not whatever is known under the number now: a scan may have
  // read the number's next process since, which the entry's exits say nothing of.
  return settle_exit(pid, end.wait_status, end.start_ticks, std::nullopt) || forgot;
}

bool HolderBook::settle_exit(pid_t pid, std::optional<int> wait_status,
                             std::optional<uint64_t> start, std::optional<uint64_t> at_ticks) {
  const bool holder = holders_.count(pid) > 0;
  const bool parent = std::any_of(forked_by_.begin(), forked_by_.end(),
                                  [&](const auto& kv) { return kv.second == pid; });
  const bool in_view = scanned_starts_.count(pid) > 0;
  if (holder || parent || in_view || unconfirmed_.contains(pid) || forked_by_.count(pid) ||
      exited_parents_.count(pid)) {
    // One thread's exit is no process's end (an exec from another thread, a leader's
    // pthread_exit, a group exit whose other threads are still ending): nothing is recorded
    // until /proc shows the thread group gone. A holder is read again all the same.
    const ProcessExit seen = check_exit(proc_, pid, start, at_ticks);
    // Checked again with no event, a process whose number another has now ended when no one
    // knows, and its latest exit read (whose status the entry kept) may not have been its end.
    if (seen == ProcessExit::Replaced && !at_ticks) return ended_replaced(pid, *start);
    if (seen == ProcessExit::LeaderRuns || seen == ProcessExit::ThreadsRun) {
      if (seen == ProcessExit::ThreadsRun)
        unconfirmed_.reported(pid, wait_status, start, std::chrono::steady_clock::now());
      else
        unconfirmed_.forget(pid);
      if (!holder) return false;
      read_again(pid);
      return true;
    }
  }
  unconfirmed_.forget(pid);
  unconfirmed_opens_.erase(pid);
  // Unvouched still (/proc could not say whose the number is): the exit may be another
  // process's, its status and time not the recorded one's end.
  const bool vouched = unvouched_.erase(pid) == 0;
  // An exit event dates the end: the kernel's time of it, not the time it was read. The
  // connector stamps it with CLOCK_MONOTONIC, which stops while the machine is suspended; the
  // records are in /proc's clock of start times (clock ticks of CLOCK_BOOTTIME, not the wall
  // clock, which can be set), so the batch adds the time spent suspended as its read saw it
  // (Batch::boot_ticks). A suspend between the exit and that read makes the end read later than
  // it was, by that sleep, never earlier. A check with no event (an unconfirmed end found gone)
  // dates it by the check: the process ended no later.
  const uint64_t end_ticks = at_ticks ? *at_ticks : engine::boot_ticks_now();
  if ((holder || parent) && vouched) note_end(pid, holder, wait_status, start, end_ticks);
  // A parent's start read when its number was the next process's (see known_start()) stays.
  if (auto it = parent_starts_.find(pid);
      it != parent_starts_.end() && (!start || it->second <= *start))
    parent_starts_.erase(it);
  began_.erase(pid);  // the PID may be handed out again
  forget_scanned_start(pid, start);
  // The engine reads it again until /proc shows it gone: it may be a zombie when read now.
  if (in_view) exited_.insert(pid);
  if (in_view || holder) ended_since_take(pid, start);
  const bool reparented = exited(pid);
  if (!holders_.erase(pid)) {
    remember_exit(pid);
    return reparented;  // its children are orphans: a sample says so
  }
  read_again(pid);
  return true;
}

bool HolderBook::ended_replaced(pid_t pid, uint64_t start) {
  // No fork has handed the number out yet as far as the events go (that fork would have ended
  // the entry, and every event of the next process comes after it): what the events recorded
  // under the number is this process's. Only a scan can have read the next one, and a holder
  // it saw there is that one's, kept.
  auto seen = scanned_starts_.find(pid);
  const bool next_holds =
      seen != scanned_starts_.end() && seen->second != start && scanned_holders_.count(pid) > 0;
  const bool in_view = seen != scanned_starts_.end() && seen->second == start;
  unconfirmed_.forget(pid);
  unconfirmed_opens_.erase(pid);
  began_.erase(pid);
  forget_scanned_start(pid, start);
  if (auto it = parent_starts_.find(pid); it != parent_starts_.end() && it->second == start)
    parent_starts_.erase(it);
  bool changed = exited(pid);  // its children were reparented
  if (in_view) {
    exited_.insert(pid);
    changed = true;
  }
  if (!next_holds && holders_.erase(pid)) {
    read_again(pid);
    changed = true;
  }
  ended_since_take(pid, start);
  return changed;
}

bool HolderBook::exit_before_start(pid_t pid) {
  // The exit is of the process the number had before, whose start time is not kept: no end is
  // recorded. What the events recorded of that process goes with it: the children its forks
  // made holders were reparented, and an unconfirmed end kept for it (none with a start time:
  // that would be a later process's) is over. The processes recorded under the number stay as
  // they were: their own exits come later.
  const bool reparented = exited(pid);
  if (const auto* end = unconfirmed_.find(pid); end && !end->start_ticks) unconfirmed_.forget(pid);
  if (!holders_.count(pid)) remember_exit(pid);
  return reparented;
}

void HolderBook::forget_scanned_start(pid_t pid, std::optional<uint64_t> start) {
  if (auto it = scanned_starts_.find(pid);
      start && it != scanned_starts_.end() && it->second == *start)
    scanned_starts_.erase(it);
}

void HolderBook::ended_since_take(pid_t pid, std::optional<uint64_t> start) {
  if (ended_since_take_.size() >= kKeptRecentForks) {
    // Too many to keep: the collection in progress vouches for nothing it read, as if exits
    // had been lost, and the next one scans in full.
    ++exit_losses_;
    ++counters_.overflows;
    lost_ = true;
    ended_since_take_.clear();
  }
  ended_since_take_[pid] = start;
}

std::optional<uint64_t> HolderBook::known_start(pid_t pid, std::optional<uint64_t> by_ticks) const {
  // Each was read from /proc under the number, so each is a process that had it at some time,
  // and the one with the latest start had it last: the newest evidence. The kernel hands a
  // number out again only once its process has ended, so none of the others has it now, nor at
  // a time after that one's start.
  std::optional<uint64_t> out;
  auto take = [&](std::optional<uint64_t> start) {
    if (start && (!by_ticks || *start <= *by_ticks) && (!out || *start > *out)) out = start;
  };
  if (auto it = parent_starts_.find(pid); it != parent_starts_.end()) take(it->second);
  if (auto it = scanned_starts_.find(pid); it != scanned_starts_.end()) take(it->second);
  if (const auto* end = unconfirmed_.find(pid)) take(end->start_ticks);
  return out;
}

void HolderBook::add_forked_holder(pid_t child, pid_t parent,
                                   std::chrono::system_clock::time_point at) {
  ++counters_.forks;
  holders_.insert(child);
  forked_by_[child] = parent;
  note_beginning(child, at);
  // Its exit is checked against /proc by its start time, which is read now (it has just forked,
  // so it is there) when no scan gave it.
  if (!scanned_starts_.count(parent) && !parent_starts_.count(parent))
    if (auto st = proc_.read_stat(parent); st && *st) parent_starts_[parent] = (*st)->start_ticks;
}

void HolderBook::remember_fork(pid_t child, pid_t parent) {
  const auto now = std::chrono::steady_clock::now();
  const std::optional<RecentForks::Fork> oldest =
      recent_forks_.add(child, parent, now, kRecentForkWindow, kKeptRecentForks);
  if (!oldest) return;
  if (dropped_fork_parents_.size() >= kKeptRecentForks)
    std::erase_if(dropped_fork_parents_,
                  [&](const auto& kv) { return now - kv.second > kRecentForkWindow; });
  if (dropped_fork_parents_.size() >= kKeptRecentForks)
    dropped_all_until_ = now + kRecentForkWindow;
  else
    dropped_fork_parents_[oldest->parent] = oldest->at;
}

void HolderBook::remember_exit(pid_t pid) {
  const auto now = std::chrono::steady_clock::now();
  if (recent_exits_.size() >= kKeptRecentForks)
    std::erase_if(recent_exits_,
                  [&](const auto& kv) { return now - kv.second > kRecentForkWindow; });
  if (recent_exits_.size() >= kKeptRecentForks) recent_exits_.clear();  // a storm of exits
  recent_exits_[pid] = now;
}

bool HolderBook::ended_before_read(pid_t pid) {
  auto it = recent_exits_.find(pid);
  if (it == recent_exits_.end()) return false;
  const bool recent = std::chrono::steady_clock::now() - it->second <= kRecentForkWindow;
  recent_exits_.erase(it);
  // The PID may name a new process by now: only /proc tells.
  return recent && check_exit(proc_, pid, std::nullopt) == ProcessExit::Ended;
}

void HolderBook::exited_unseen(pid_t pid) {
  holders_.erase(pid);
  unconfirmed_opens_.erase(pid);
  began_.erase(pid);
  exited(pid);  // the children its open made holders were reparented
}

void HolderBook::check_dropped_forks(pid_t pid) {
  const auto now = std::chrono::steady_clock::now();
  auto it = dropped_fork_parents_.find(pid);
  const bool dropped = it != dropped_fork_parents_.end() && now - it->second <= kRecentForkWindow;
  if (dropped || now < dropped_all_until_) {
    ++counters_.overflows;
    lost_ = true;
  }
  if (it != dropped_fork_parents_.end()) dropped_fork_parents_.erase(it);
}

void HolderBook::claim_recent_forks(pid_t opener) {
  const auto now = std::chrono::steady_clock::now();
  const auto holds = [&](pid_t pid) { return holders_.count(pid) > 0; };
  for (const RecentForks::Fork& f : recent_forks_.claim(opener, holds, now, kRecentForkWindow)) {
    add_forked_holder(f.child, f.parent, std::chrono::system_clock::now());
    check_dropped_forks(f.child);
    read_again(f.child);
  }
}

// The process ended: it is no one's child any more, and the children it forked were reparented.
bool HolderBook::exited(pid_t pid) {
  forked_by_.erase(pid);
  exited_parents_.erase(pid);
  bool reparented = false;
  for (auto it = forked_by_.begin(); it != forked_by_.end();) {
    if (it->second != pid) {
      ++it;
      continue;
    }
    exited_parents_[it->first] = pid;
    it = forked_by_.erase(it);
    reparented = true;
  }
  return reparented;
}

void HolderBook::note_end(pid_t pid, bool holder, std::optional<int> wait_status,
                          std::optional<uint64_t> start, uint64_t end_ticks) {
  if (!start) return;
  auto& lives = ends_[pid];
  if (lives.empty()) end_order_.push_back(pid);
  lives.push_back({*start, end_ticks, holder, wait_status});
  if (lives.size() > kEndsPerPid) lives.erase(lives.begin());
  while (end_order_.size() > kKeptEnds) {
    ends_.erase(end_order_.front());
    end_order_.pop_front();
  }
}

void HolderBook::note_open(pid_t pid, const std::string& path) {
  auto& open = unconfirmed_opens_[pid];
  open.paths.insert(path);
  open.at = std::chrono::steady_clock::now();
  if (unconfirmed_opens_.size() > kKeptRecentForks)
    drop_older_half(unconfirmed_opens_, [](const UnconfirmedOpen& o) { return o.at; });
}

void HolderBook::note_beginning(pid_t pid, std::chrono::system_clock::time_point at) {
  began_.try_emplace(pid, at);
  if (began_.size() > kKeptBeginnings) drop_older_half(began_, [](const auto& t) { return t; });
}

}  // namespace gpureap::daemon
