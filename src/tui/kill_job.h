#pragma once
// A kill started from `top`, always through the reaper: planned over the snapshot on screen
// (shown and confirmed), then executed and verified on a thread of its own so the screen
// stays live while the reaper waits for exits and for the memory to come back.
#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"
#include "reap/outcome.h"
#include "reap/pipeline.h"
#include "reap/plan.h"
#include "reap/world.h"

namespace gpureap::tui {

// The signal, grace and waits of top's kills (--grace, --wait-release).
using KillConfig = reap::ReapOptions;
// Told of a kill just before its first signal (the plan, the signal): the daemon's record.
using AnnounceKill = std::function<void(const reap::Plan&, int signal)>;

// The plan for killing `pids` (each one named, as on `gpureap kill PID...`).
core::Result<reap::Plan> plan_kill(const core::Snapshot& snapshot, const std::vector<pid_t>& pids,
                                   const reap::World& world);
// The plan as the dialog shows it, cut to `width` columns.
std::vector<std::string> plan_lines(const core::Snapshot& snapshot, const reap::Plan& plan,
                                    const std::vector<pid_t>& pids, const KillConfig& config,
                                    size_t width);
// What the dialog says a kill did: each target's outcome and the memory freed.
std::vector<std::string> outcome_lines(const reap::Plan& plan, const reap::Report& report,
                                       size_t width);

class KillJob {
 public:
  // The job shares the world: a job left behind keeps it alive.
  KillJob(std::shared_ptr<const reap::World> world, reap::Plan plan, KillConfig config,
          AnnounceKill announce = {});
  KillJob(const KillJob&) = delete;
  KillJob& operator=(const KillJob&) = delete;
  ~KillJob();  // a job still running is left behind (detached)

  void start();
  bool finished() const;
  std::string progress() const;
  // Once finished. error: the reaper threw (the report is then empty).
  const reap::Report& report() const;
  const std::optional<std::string>& error() const;
  const reap::Plan& plan() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace gpureap::tui
