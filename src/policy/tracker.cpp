#include "policy/tracker.h"

#include <algorithm>

namespace gpureap::policy {

void Tracker::configure(std::vector<Policy> policies, bool enforce) {
  const bool now_enforced = enforce && !enforce_;
  for (auto it = states_.begin(); it != states_.end();) {
    // A policy whose conditions changed matches anew: its `after` clock starts again.
    const Policy* before = nullptr;
    for (const auto& p : policies_)
      if (p.name == it->first.first) before = &p;
    bool kept = before && std::any_of(policies.begin(), policies.end(), [&](const Policy& p) {
                  return p.name == it->first.first && same_conditions(p, *before);
                });
    if (!kept || (now_enforced && it->second.logged_only))
      it = states_.erase(it);
    else
      ++it;
  }
  policies_ = std::move(policies);
  enforce_ = enforce;
}

std::vector<Task> Tracker::observe(const std::vector<std::vector<Evaluation>>& evaluations,
                                   TimePoint now, const Exists& exists) {
  std::vector<Task> tasks;
  for (auto& [key, state] : states_) state.seen = false;
  for (size_t i = 0; i < policies_.size() && i < evaluations.size(); ++i) {
    const Policy& p = policies_[i];
    for (const Evaluation& e : evaluations[i]) {
      Key key{p.name, Identity{e.pid, e.start_ticks}};
      auto it = states_.find(key);
      if (!e.matched()) {
        // A broken match restarts the `after` clock and ends retries; what was done stays done.
        if (it != states_.end()) {
          if (it->second.phase == Phase::Waiting || it->second.phase == Phase::Backoff)
            states_.erase(it);
          else
            it->second.seen = true;
        }
        continue;
      }
      if (it == states_.end()) it = states_.emplace(key, State{now}).first;
      State& s = it->second;
      s.seen = true;
      auto task = [&](bool act) {
        tasks.push_back({i, key.second, e, act, act ? ++s.attempts : 0});
      };
      if (s.phase == Phase::Waiting && now - s.since >= p.after) {
        bool act = enforce_ && p.action != Action::Notify;
        s.phase = act ? Phase::Running : Phase::Done;
        s.logged_only = !act && p.action != Action::Notify;
        task(act);
      } else if (s.phase == Phase::Backoff && now >= s.next_try) {
        s.phase = Phase::Running;
        task(true);
      }
    }
  }
  // An identity that no longer exists cannot come back: its state goes. One that merely
  // stopped being a row (it closed its GPU files for a while) keeps what was done for it, so
  // it is never acted on twice; its `after` clock restarts. One being acted on stays until its
  // action ends.
  for (auto it = states_.begin(); it != states_.end();) {
    State& s = it->second;
    bool keep = s.seen || s.phase == Phase::Running ||
                ((s.phase == Phase::Done || s.phase == Phase::GaveUp) && exists &&
                 exists(it->first.second));
    if (keep)
      ++it;
    else
      it = states_.erase(it);
  }
  return tasks;
}

std::vector<Tracker::Item> Tracker::items() const {
  std::vector<Item> out;
  for (const auto& [key, s] : states_)
    out.push_back({key.first, key.second, s.phase, s.since, s.attempts, s.next_try});
  return out;
}

Tracker::After Tracker::finished(const std::string& policy, const Identity& identity, bool retry,
                                 TimePoint now) {
  auto it = states_.find({policy, identity});
  if (it == states_.end()) return After::Done;
  State& s = it->second;
  if (!retry) {
    s.phase = Phase::Done;
    return After::Done;
  }
  if (s.attempts >= kMaxAttempts) {
    s.phase = Phase::GaveUp;
    return After::GaveUp;
  }
  s.phase = Phase::Backoff;
  s.next_try = now + kFirstRetryAfter * (1 << (s.attempts - 1));
  return After::RetryLater;
}

void Tracker::restart(const std::string& policy, const Identity& identity) {
  states_.erase({policy, identity});
}

}  // namespace gpureap::policy
