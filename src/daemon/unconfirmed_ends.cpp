#include "daemon/unconfirmed_ends.h"

namespace gpureap::daemon {

void UnconfirmedEnds::reported(pid_t pid, std::optional<int> wait_status,
                               std::optional<uint64_t> start_ticks, Clock::time_point now) {
  End& e = ends_[pid];
  e.wait_status = wait_status;
  if (start_ticks) e.start_ticks = start_ticks;
  e.due = now + kRecheckDelays[0];
  e.checks = 0;
}

void UnconfirmedEnds::watch(pid_t pid, uint64_t start_ticks) {
  ends_.try_emplace(pid, End{std::nullopt, start_ticks, Clock::time_point::max(), 0});
}

const UnconfirmedEnds::End* UnconfirmedEnds::find(pid_t pid) const {
  auto it = ends_.find(pid);
  return it == ends_.end() ? nullptr : &it->second;
}

std::vector<pid_t> UnconfirmedEnds::pids() const {
  std::vector<pid_t> out;
  out.reserve(ends_.size());
  for (const auto& kv : ends_) out.push_back(kv.first);
  return out;
}

void UnconfirmedEnds::events_lost(Clock::time_point now) {
  for (auto it = ends_.begin(); it != ends_.end();) {
    if (!it->second.start_ticks) {
      it = ends_.erase(it);
      continue;
    }
    it->second.wait_status.reset();
    it->second.due = now;
    it->second.checks = 0;
    ++it;
  }
}

std::vector<std::pair<pid_t, UnconfirmedEnds::End>> UnconfirmedEnds::due(
    Clock::time_point now) const {
  std::vector<std::pair<pid_t, End>> out;
  for (const auto& [pid, e] : ends_)
    if (e.due <= now) out.emplace_back(pid, e);
  return out;
}

void UnconfirmedEnds::still_running(pid_t pid, size_t checks_before, Clock::time_point now) {
  auto it = ends_.find(pid);
  if (it == ends_.end()) return;
  it->second.checks = checks_before + 1;
  it->second.due = it->second.checks < kRecheckDelays.size()
                       ? now + kRecheckDelays[it->second.checks]
                       : Clock::time_point::max();
}

std::optional<UnconfirmedEnds::Clock::time_point> UnconfirmedEnds::next() const {
  std::optional<Clock::time_point> out;
  for (const auto& [pid, e] : ends_)
    if (e.due != Clock::time_point::max() && (!out || e.due < *out)) out = e.due;
  return out;
}

}  // namespace gpureap::daemon
