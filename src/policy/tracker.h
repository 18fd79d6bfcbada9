#pragma once
// When a policy acts: the match must hold continuously for `after`; each process identity
// is acted on once per policy; a failed action is retried with backoff a bounded number of
// times, and only while the match still holds. Pure state over the evaluations of successive
// samples (time is passed in), so every rule is unit-tested.
#include <sys/types.h>

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/matcher.h"
#include "policy/policy.h"

namespace gpureap::policy {

using TimePoint = std::chrono::system_clock::time_point;

// A process for good: PID and start time (empty for a PID the driver lists and /proc lacks).
struct Identity {
  pid_t pid = 0;
  std::optional<uint64_t> start_ticks;
  auto operator<=>(const Identity&) const = default;
};

// Something to do now for one policy and one process.
struct Task {
  size_t policy = 0;  // index into the policies given to configure()
  Identity identity;
  Evaluation evaluation;
  bool act = false;      // false: only record the decision (notify, or not enforced)
  unsigned attempt = 0;  // 1 for the first try of an action
};

inline constexpr unsigned kMaxAttempts = 3;
inline constexpr std::chrono::seconds kFirstRetryAfter{30};  // then doubled

class Tracker {
 public:
  // New policies and enforcement. State of policies that keep their name is kept; decisions
  // that were only logged because enforcement was off are forgotten when it is turned on,
  // so the now-enforced policy acts on them.
  void configure(std::vector<Policy> policies, bool enforce);
  const std::vector<Policy>& policies() const { return policies_; }
  bool enforced() const { return enforce_; }

  // Whether a process identity still exists (in /proc, or listed by the driver when gone).
  using Exists = std::function<bool(const Identity&)>;

  // The evaluations of one sample, one vector per policy (in configure()'s order). What was
  // done for an identity is remembered while `exists` says it does (null: while it is a row).
  std::vector<Task> observe(const std::vector<std::vector<Evaluation>>& evaluations, TimePoint now,
                            const Exists& exists = nullptr);

  enum class After { Done, RetryLater, GaveUp };
  // An action's end: `retry` when a later attempt could succeed (the process survived).
  After finished(const std::string& policy, const Identity& identity, bool retry, TimePoint now);

  // An action dropped before it ran because its match broke while it waited: as for any broken
  // match, the identity's `after` clock starts again from its next match.
  void restart(const std::string& policy, const Identity& identity);

  size_t tracked() const { return states_.size(); }

  enum class Phase { Waiting, Running, Backoff, Done, GaveUp };
  // One tracked policy and process, for the daemon's /api/v1/policies.
  struct Item {
    std::string policy;
    Identity identity;
    Phase phase = Phase::Waiting;
    TimePoint since;  // matching continuously since
    unsigned attempts = 0;
    TimePoint next_try;  // Backoff: the next attempt, if it still matches then
  };
  std::vector<Item> items() const;

 private:
  struct State {
    TimePoint since;
    Phase phase = Phase::Waiting;
    unsigned attempts = 0;
    TimePoint next_try;
    bool logged_only = false;  // Done because enforcement was off
    bool seen = false;         // present in the latest sample
  };
  using Key = std::pair<std::string, Identity>;

  std::vector<Policy> policies_;
  bool enforce_ = false;
  std::map<Key, State> states_;
};

}  // namespace gpureap::policy
