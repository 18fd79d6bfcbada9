#include "daemon/holder_tracker.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

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

core::Result<std::shared_ptr<HolderTracker>> HolderTracker::start(
    const std::vector<std::string>& files, procfs::ProcFs proc, std::function<void()> wake) {
  if (files.empty())
    return core::Error{"no GPU device file to watch under the dev root", "holder scans only"};
  auto watch = track::FanotifyWatch::open(files);
  if (!watch) return watch.error();
  return std::shared_ptr<HolderTracker>(new HolderTracker(
      std::move(*watch), track::ProcEvents::open(), std::move(proc), std::move(wake)));
}

HolderTracker::HolderTracker(track::FanotifyWatch files, core::Result<track::ProcEvents> procs,
                             procfs::ProcFs proc, std::function<void()> wake)
    : files_(std::move(files)),
      proc_(std::move(proc)),
      wake_(std::move(wake)),
      stop_fd_(::eventfd(0, EFD_CLOEXEC)) {
  if (procs)
    procs_.emplace(std::move(*procs));
  else
    forks_unavailable_ = procs.error().text();
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "gpureap-events");  // its CPU apart (top -H, bench)
    run();
  });
}

HolderTracker::~HolderTracker() {
  stop();
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void HolderTracker::stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  if (stop_fd_ < 0 || ::write(stop_fd_, &one, sizeof one) != sizeof one) {
    thread_.detach();  // cannot be told: it ends with the process
    return;
  }
  thread_.join();
}

void HolderTracker::run() {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> next_recheck;  // of an unconfirmed end
  for (;;) {
    const auto now = Clock::now();
    if (auto due = pacer_.wake_due(); due && now >= *due) {
      pacer_.woke(now);
      if (wake_) wake_();
    }
    const bool files_now = now >= pacer_.next_file_read();
    pollfd fds[3] = {
        {stop_fd_, POLLIN, 0}, {files_now ? files_.fd() : -1, POLLIN, 0}, {-1, POLLIN, 0}};
    if (procs_) fds[2].fd = procs_->fd();
    std::optional<Clock::time_point> until = pacer_.wake_due();
    if (!files_now && (!until || pacer_.next_file_read() < *until)) until = pacer_.next_file_read();
    if (next_recheck && (!until || *next_recheck < *until)) until = next_recheck;
    int timeout = -1;
    if (until) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*until - Clock::now());
      timeout = static_cast<int>(std::max<int64_t>(left.count(), 0));
    }
    if (::poll(fds, 3, timeout) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;
    if (fds[1].revents) {
      auto batch = files_.read();
      std::vector<pid_t> pids;
      pids.reserve(batch.events.size());
      for (const auto& e : batch.events) pids.push_back(e.pid);
      const bool lost = batch.overflow;
      on_files(std::move(batch));
      pacer_.files_read(pids, lost, Clock::now());
    }
    if (fds[2].revents && procs_ && on_procs(procs_->read())) pacer_.news();
    // Unconfirmed ends change only here (events, checks), so the next check is known until then.
    const Rechecked rechecked = recheck_unconfirmed(Clock::now());
    if (rechecked.changed) pacer_.news();
    next_recheck = rechecked.next;
  }
}

HolderTracker::Rechecked HolderTracker::recheck_unconfirmed(
    std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mutex_);
  Rechecked out;
  for (const auto& [pid, e] : unconfirmed_.due(now)) {
    out.changed = on_exit(pid, e.wait_status) || out.changed;
    // Still running (if still followed): the next check comes later, and none after the last
    // delay until an event.
    unconfirmed_.still_running(pid, e.checks, now);
  }
  out.next = unconfirmed_.next();
  return out;
}

void HolderTracker::on_files(track::FanotifyWatch::Batch batch) {
  std::lock_guard lock(mutex_);
  for (auto& e : batch.events) {
    changed_.insert(e.pid);
    touched_.insert(e.pid);
    if (e.kind == track::FileEvent::Kind::Open) {
      ++counters_.opens;
      holders_.insert(e.pid);
      note_open(e.pid, e.path);
      note_beginning(e.pid, e.at);
      check_dropped_forks(e.pid);
      claim_recent_forks();
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
  if (batch.overflow) {
    ++counters_.overflows;
    lost_ = true;
  }
}

bool HolderTracker::on_procs(track::ProcEvents::Batch batch) {
  bool changed = false;
  {
    std::lock_guard lock(mutex_);
    for (const auto& e : batch.events) {
      switch (e.kind) {
        case track::ProcEvent::Kind::Fork:
          // The child inherits the holder's fds: no open event, so it must be scanned.
          if (!holders_.count(e.parent)) {
            remember_fork(e.pid, e.parent);
            continue;
          }
          add_forked_holder(e.pid, e.parent, std::chrono::system_clock::now());
          changed_.insert(e.pid);
          touched_.insert(e.pid);
          changed = true;
          break;
        case track::ProcEvent::Kind::Exit:
          changed = on_exit(e.pid, e.wait_status) || changed;
          break;
        case track::ProcEvent::Kind::ThreadExit:
          // Any thread's exit may be the end of a process whose leader ended before it.
          if (unconfirmed_.contains(e.pid)) changed = on_exit(e.pid, e.wait_status) || changed;
          break;
      }
    }
    // Lost forks may be lost holders: only a full scan knows. A lost exit may leave a PID that
    // is reused next among the records of parents: none is kept past a loss. An unconfirmed
    // end is checked at once by its start time instead (daemon/unconfirmed_ends.h).
    if (batch.overflow) {
      ++counters_.overflows;
      lost_ = changed = true;
      forked_by_.clear();
      exited_parents_.clear();
      unconfirmed_.events_lost(std::chrono::steady_clock::now());
      parent_starts_.clear();
    }
  }
  return changed;
}

bool HolderTracker::on_exit(pid_t pid, std::optional<int> wait_status) {
  const bool holder = holders_.count(pid) > 0;
  const bool parent = std::any_of(forked_by_.begin(), forked_by_.end(),
                                  [&](const auto& kv) { return kv.second == pid; });
  const bool in_view = scanned_starts_.count(pid) > 0;
  // Whatever is known of it is kept until /proc confirms.
  const auto start = known_start(pid);
  if (holder || parent || in_view || unconfirmed_.contains(pid) || forked_by_.count(pid) ||
      exited_parents_.count(pid)) {
    // One thread's exit is no process's end (an exec from another thread, a leader's
    // pthread_exit, a group exit whose other threads are still ending): nothing is recorded
    // until /proc shows the thread group gone. A holder is read again all the same.
    const ProcessExit seen = check_exit(proc_, pid, start);
    if (seen != ProcessExit::Ended) {
      if (seen == ProcessExit::ThreadsRun)
        unconfirmed_.reported(pid, wait_status, start, std::chrono::steady_clock::now());
      else
        unconfirmed_.forget(pid);
      if (!holder) return false;
      changed_.insert(pid);
      touched_.insert(pid);
      return true;
    }
  }
  unconfirmed_.forget(pid);
  unconfirmed_opens_.erase(pid);
  if (holder || parent) note_end(pid, holder, wait_status, start);
  parent_starts_.erase(pid);
  began_.erase(pid);  // the PID may be handed out again
  // The engine reads it again until /proc shows it gone: it may be a zombie when read now.
  if (in_view) exited_.insert(pid);
  const bool reparented = exited(pid);
  if (!holders_.erase(pid)) {
    remember_exit(pid);
    return reparented;  // its children are orphans: a sample says so
  }
  changed_.insert(pid);
  touched_.insert(pid);
  return true;
}

std::optional<uint64_t> HolderTracker::known_start(pid_t pid) const {
  if (auto it = parent_starts_.find(pid); it != parent_starts_.end()) return it->second;
  if (auto it = scanned_starts_.find(pid); it != scanned_starts_.end()) return it->second;
  if (const auto* end = unconfirmed_.find(pid)) return end->start_ticks;
  return std::nullopt;
}

void HolderTracker::add_forked_holder(pid_t child, pid_t parent,
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

void HolderTracker::remember_fork(pid_t child, pid_t parent) {
  const auto now = std::chrono::steady_clock::now();
  recent_forks_.push_back({child, parent, now});
  if (recent_forks_.size() <= kKeptRecentForks) return;
  const RecentFork oldest = recent_forks_.front();
  recent_forks_.pop_front();
  if (now - oldest.at > kRecentForkWindow) return;
  if (dropped_fork_parents_.size() >= kKeptRecentForks)
    std::erase_if(dropped_fork_parents_,
                  [&](const auto& kv) { return now - kv.second > kRecentForkWindow; });
  if (dropped_fork_parents_.size() >= kKeptRecentForks)
    dropped_all_until_ = now + kRecentForkWindow;
  else
    dropped_fork_parents_[oldest.parent] = oldest.at;
}

void HolderTracker::remember_exit(pid_t pid) {
  const auto now = std::chrono::steady_clock::now();
  if (recent_exits_.size() >= kKeptRecentForks)
    std::erase_if(recent_exits_,
                  [&](const auto& kv) { return now - kv.second > kRecentForkWindow; });
  if (recent_exits_.size() >= kKeptRecentForks) recent_exits_.clear();  // a storm of exits
  recent_exits_[pid] = now;
}

bool HolderTracker::ended_before_read(pid_t pid) {
  auto it = recent_exits_.find(pid);
  if (it == recent_exits_.end()) return false;
  const bool recent = std::chrono::steady_clock::now() - it->second <= kRecentForkWindow;
  recent_exits_.erase(it);
  // The PID may name a new process by now: only /proc tells.
  return recent && check_exit(proc_, pid, std::nullopt) == ProcessExit::Ended;
}

void HolderTracker::exited_unseen(pid_t pid) {
  holders_.erase(pid);
  unconfirmed_opens_.erase(pid);
  began_.erase(pid);
  exited(pid);  // the children its open made holders were reparented
}

void HolderTracker::check_dropped_forks(pid_t pid) {
  const auto now = std::chrono::steady_clock::now();
  auto it = dropped_fork_parents_.find(pid);
  const bool dropped = it != dropped_fork_parents_.end() && now - it->second <= kRecentForkWindow;
  if (dropped || now < dropped_all_until_) {
    ++counters_.overflows;
    lost_ = true;
  }
  if (it != dropped_fork_parents_.end()) dropped_fork_parents_.erase(it);
}

void HolderTracker::claim_recent_forks() {
  const auto now = std::chrono::steady_clock::now();
  while (!recent_forks_.empty() && now - recent_forks_.front().at > kRecentForkWindow)
    recent_forks_.pop_front();
  // Parents come before their children in the queue, so one pass finds grandchildren too.
  for (auto it = recent_forks_.begin(); it != recent_forks_.end();) {
    if (!holders_.count(it->parent)) {
      ++it;
      continue;
    }
    add_forked_holder(it->child, it->parent, std::chrono::system_clock::now());
    check_dropped_forks(it->child);
    changed_.insert(it->child);
    touched_.insert(it->child);
    it = recent_forks_.erase(it);
  }
}

// The process ended: it is no one's child any more, and the children it forked were reparented.
bool HolderTracker::exited(pid_t pid) {
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

void HolderTracker::note_end(pid_t pid, bool holder, std::optional<int> wait_status,
                             std::optional<uint64_t> start) {
  if (!start) return;
  auto& lives = ends_[pid];
  if (lives.empty()) end_order_.push_back(pid);
  lives.push_back({*start, engine::boot_ticks_now(), holder, wait_status});
  if (lives.size() > kEndsPerPid) lives.erase(lives.begin());
  while (end_order_.size() > kKeptEnds) {
    ends_.erase(end_order_.front());
    end_order_.pop_front();
  }
}

std::map<pid_t, std::vector<core::ProcessEnd>> HolderTracker::ends() const {
  std::lock_guard lock(mutex_);
  return ends_;
}

std::map<pid_t, pid_t> HolderTracker::exited_parents() const {
  std::lock_guard lock(mutex_);
  return exited_parents_;
}

engine::ScanRequest HolderTracker::take() {
  std::lock_guard lock(mutex_);
  engine::ScanRequest r{
      {changed_.begin(), changed_.end()}, lost_, {exited_.begin(), exited_.end()}};
  changed_.clear();
  exited_.clear();
  lost_ = false;
  return r;
}

// What a full scan finds that the latest scan did not, about processes that were already
// there and that no event has named since: a holder events missed (an fd received over a
// socket, a lost event), or one they did not see let go.
void HolderTracker::count_drift(const core::ProcView& view) {
  for (const auto& p : view.processes) {
    pid_t pid = p.stat.pid;
    auto before = scanned_starts_.find(pid);
    if (before == scanned_starts_.end() || before->second != p.stat.start_ticks) continue;
    if (touched_.count(pid)) continue;
    if (p.holds_device() != (scanned_holders_.count(pid) > 0)) ++counters_.drift;
  }
}

void HolderTracker::scanned(const core::ProcView& view, bool full) {
  std::lock_guard lock(mutex_);
  if (full && scanned_once_) count_drift(view);
  scanned_holders_.clear();
  scanned_starts_.clear();
  for (const auto& p : view.processes) {
    scanned_starts_.emplace(p.stat.pid, p.stat.start_ticks);
    if (p.holds_device()) scanned_holders_.insert(p.stat.pid);
    // One whose main thread alone has exited ends with its last thread, whose exit is no
    // leader's: only the processes in unconfirmed_ have their threads' exits read. Those whose
    // leader's exit no event brought (it exited before the tracker began) are put there by the
    // scan that reads them so; otherwise their end would never be read, and a holder's number
    // kept a holder's forever.
    if (p.stat.leader_exited) unconfirmed_.watch(p.stat.pid, p.stat.start_ticks);
  }
  // Holders the scan could not see holding stay holders until their exit is read: one that
  // events named after this collection took its request (changed_ since take()) opened after
  // the scan read it, and one that had ended or was ending by then (gone, a zombie, or in
  // do_exit(), which closes its files before the exit is reported) holds nothing to read.
  // Forgetting either would leave a fork it made unfollowed and its end unrecorded. One whose
  // main thread alone has exited runs on (is_exiting() is its live thread's): holding nothing,
  // it closed its files, and is a holder no more.
  std::vector<pid_t> newer = opens_to_confirm(view);
  for (pid_t pid : holders_) {
    const core::HostProcess* p = view.find(pid);
    if (changed_.count(pid) || !p || p->stat.is_zombie() || p->stat.is_exiting())
      newer.push_back(pid);
  }
  holders_ = scanned_holders_;
  holders_.insert(newer.begin(), newer.end());
  touched_.clear();
  scanned_once_ = true;
  // Start times are kept for parents whose children are still followed.
  std::erase_if(parent_starts_, [&](const auto& kv) {
    return std::none_of(forked_by_.begin(), forked_by_.end(),
                        [&](const auto& f) { return f.second == kv.first; });
  });
}

void HolderTracker::note_open(pid_t pid, const std::string& path) {
  auto& open = unconfirmed_opens_[pid];
  open.paths.insert(path);
  open.at = std::chrono::steady_clock::now();
  if (unconfirmed_opens_.size() > kKeptRecentForks)
    drop_older_half(unconfirmed_opens_, [](const UnconfirmedOpen& o) { return o.at; });
}

std::vector<pid_t> HolderTracker::opens_to_confirm(const core::ProcView& view) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<pid_t> again;
  for (auto it = unconfirmed_opens_.begin(); it != unconfirmed_opens_.end();) {
    const pid_t pid = it->first;
    const core::HostProcess* p = view.find(pid);
    // Confirmed, or nothing left to confirm: a gone process's end is the exit's to record.
    if (!p || p->stat.is_zombie() || p->holds_device() ||
        now - it->second.at > kOpenConfirmWindow) {
      it = unconfirmed_opens_.erase(it);
      continue;
    }
    // Read before its fd was in place: still a holder, read again at the next collection.
    again.push_back(pid);
    changed_.insert(pid);
    ++it;
  }
  return again;
}

TrackerCounters HolderTracker::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

std::optional<std::chrono::system_clock::time_point> HolderTracker::released_by(pid_t pid) const {
  std::lock_guard lock(mutex_);
  for (auto it = releases_.rbegin(); it != releases_.rend(); ++it)
    if (it->pid == pid) return it->at;
  return std::nullopt;
}

void HolderTracker::note_beginning(pid_t pid, std::chrono::system_clock::time_point at) {
  began_.try_emplace(pid, at);
  if (began_.size() > kKeptBeginnings) drop_older_half(began_, [](const auto& t) { return t; });
}

std::optional<std::chrono::system_clock::time_point> HolderTracker::began_holding(pid_t pid) const {
  std::lock_guard lock(mutex_);
  auto it = began_.find(pid);
  if (it == began_.end()) return std::nullopt;
  return it->second;
}

std::vector<Release> HolderTracker::releases() const {
  std::lock_guard lock(mutex_);
  return {releases_.begin(), releases_.end()};
}

}  // namespace gpureap::daemon
