#include "daemon/wake_pacer.h"

#include <algorithm>

namespace gpureap::daemon {

void WakePacer::files_read(const std::vector<pid_t>& pids, bool lost, Clock::time_point now) {
  bool storming = false;
  for (pid_t pid : pids) {
    auto [it, added] = last_event_.try_emplace(pid, now);
    const bool hot = !added && now - it->second < kHotWindow;
    it->second = now;
    if (hot) {
      storming = true;
      if (!hot_due_) hot_due_ = last_wake_ + kHotWakeGap;
    } else {
      news_ = true;
    }
  }
  // Forgotten once quiet, so this holds only the last window's processes.
  if (last_event_.size() > 64)
    std::erase_if(last_event_, [&](const auto& kv) { return now - kv.second >= kHotWindow; });
  if (lost) news_ = true;
  next_file_read_ = storming ? now + kFileReadGap : now;
}

void WakePacer::news() {
  news_ = true;
}

WakePacer::Clock::time_point WakePacer::token_from() const {
  return next_token_ - (kWakeBurst - 1) * kMinWakeGap;
}

std::optional<WakePacer::Clock::time_point> WakePacer::wake_due() const {
  std::optional<Clock::time_point> due = hot_due_;
  if (news_ && (!due || token_from() < *due)) due = token_from();
  return due;
}

void WakePacer::woke(Clock::time_point now) {
  // One wake-up takes every change so far, news and a storm's alike; news spends a token.
  if (news_) next_token_ = std::max(next_token_, now) + kMinWakeGap;
  news_ = false;
  hot_due_.reset();
  last_wake_ = now;
}

}  // namespace gpureap::daemon
