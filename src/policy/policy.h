#pragma once
// A cleanup policy: which GPU processes it matches, how long the match must hold, and what
// it does then. Read from [[policy]] tables of the daemon's config; evaluated by
// policy/matcher.h, timed by policy/tracker.h, run by policy/runner.h (the daemon's consumer)
// and acted on by policy/reaper_action.h through the reaper.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/anomaly.h"

namespace gpureap::policy {

enum class Action { Notify, Terminate, Kill };
std::string_view to_string(Action a);
std::optional<Action> action_from_string(std::string_view s);

struct Policy {
  std::string name;
  unsigned line = 0;  // of its [[policy]] table in the config, for messages

  // Conditions: every one that is set must hold. A row with a value unknown to gpureap (the
  // user of a gone PID, the utilisation of a driver that does not report it) does not match.
  std::optional<std::string> user;  // user name
  std::optional<uid_t> uid;
  std::optional<std::string>
      command;  // glob over comm, argv[0], its basename, the whole command line
  std::optional<std::string> container;  // glob over the container id, its 12-character short form,
                                         // the pod UID, the runtime
  std::optional<unsigned> gpu;           // the GPU index gpureap shows
  std::vector<core::Anomaly> anomalies;  // any one of them
  std::optional<uint64_t> min_memory;    // listed memory, summed over the matched GPUs
  std::optional<std::chrono::milliseconds> idle;  // SM utilisation below idle_below for this long
  unsigned idle_below = 5;                        // percent
  std::optional<std::chrono::milliseconds> runtime;  // the process is older than this

  std::chrono::milliseconds after{0};  // the match must hold continuously this long
  Action action = Action::Notify;
  std::chrono::milliseconds grace{
      std::chrono::seconds(10)};  // terminate: SIGTERM, then SIGKILL after this
};

// Whether two policies match the same processes: every condition is the same (what they do, and
// after how long, may differ).
bool same_conditions(const Policy& a, const Policy& b);

}  // namespace gpureap::policy
