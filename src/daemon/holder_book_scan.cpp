#include <algorithm>
#include <utility>

#include "daemon/holder_book.h"

// The holder book's side of the engine: what it asks to scan, and what a scan tells it.

namespace gpureap::daemon {

engine::ScanRequest HolderBook::take() {
  engine::ScanRequest r{
      {changed_.begin(), changed_.end()}, lost_, {exited_.begin(), exited_.end()}};
  changed_.clear();
  exited_.clear();
  ended_since_take_.clear();
  lost_ = false;
  losses_at_take_ = exit_losses_;  // what this collection reads of /proc is read after those
  return r;
}

// What a full scan finds that the latest scan did not, about processes that were already
// there and that no event has named since: a holder events missed (an fd received over a
// socket, a lost event), or one they did not see let go.
void HolderBook::count_drift(const core::ProcView& view) {
  for (const auto& p : view.processes) {
    pid_t pid = p.stat.pid;
    auto before = scanned_starts_.find(pid);
    if (before == scanned_starts_.end() || before->second != p.stat.start_ticks) continue;
    if (touched_.count(pid)) continue;
    if (p.holds_device() != (scanned_holders_.count(pid) > 0)) ++counters_.drift;
  }
}

void HolderBook::scanned(const core::ProcView& view, bool full) {
  if (full && scanned_once_) count_drift(view);
  // Read after every loss so far: it says whose each unvouched number is.
  if (full && losses_at_take_ == exit_losses_ && !unvouched_.empty()) vouch_by_scan(view);
  scanned_holders_.clear();
  scanned_starts_.clear();
  for (const auto& p : view.processes) {
    // One whose end was read after this collection took its request was read before it: the
    // view is not its to bring back (a holder kept until an exit read already, a start time
    // lent to the number's next process), and the engine reads it again. Another process under
    // the number (another start time) is the view's.
    if (auto end = ended_since_take_.find(p.stat.pid);
        end != ended_since_take_.end() && (!end->second || *end->second == p.stat.start_ticks)) {
      exited_.insert(p.stat.pid);
      continue;
    }
    scanned_starts_.emplace(p.stat.pid, p.stat.start_ticks);
    if (p.holds_device()) scanned_holders_.insert(p.stat.pid);
    // One whose main thread alone has exited ends with its last thread, whose exit is no
    // leader's: only the processes in unconfirmed_ have their threads' exits read. Those whose
    // leader's exit no event brought (it exited before the tracker began) are put there by the
    // scan that reads them so; otherwise their end would never be read, and a holder's number
    // kept a holder's forever.
    if (p.stat.leader_exited) unconfirmed_.watch(p.stat.pid, p.stat.start_ticks);
  }
  // Taken before the latest loss, this collection may have read /proc before it too: what it
  // read is vouched for no more than what was recorded then.
  if (losses_at_take_ != exit_losses_)
    for (const auto& [pid, start] : scanned_starts_) unvouched_.try_emplace(pid, start);
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

void HolderBook::vouch_by_scan(const core::ProcView& view) {
  const auto numbers = std::exchange(unvouched_, {});
  for (const auto& [pid, start] : numbers) {
    const core::HostProcess* p = view.find(pid);
    // A zombie has ended, its exit lost or yet to be read: kept, its number would stay a
    // holder's past its end.
    if (p && start && p->stat.start_ticks == *start && !p->stat.is_zombie()) continue;
    forget_process(pid, start);
  }
}

std::vector<pid_t> HolderBook::opens_to_confirm(const core::ProcView& view) {
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

std::optional<std::chrono::system_clock::time_point> HolderBook::released_by(
    pid_t pid, std::chrono::system_clock::time_point since) const {
  for (auto it = releases_.rbegin(); it != releases_.rend(); ++it)
    if (it->pid == pid && it->at >= since) return it->at;
  return std::nullopt;
}

std::optional<std::chrono::system_clock::time_point> HolderBook::began_holding(pid_t pid) const {
  auto it = began_.find(pid);
  if (it == began_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gpureap::daemon
