#pragma once
// `gpureap top`: the live view. Sampling runs on its own thread, kills on theirs; this loop
// only draws the latest snapshot and turns keys into the model's effects.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "backend/backend_set.h"
#include "collect/collector.h"
#include "core/result.h"
#include "tui/daemon_feed.h"
#include "tui/kill_job.h"

namespace gpureap::tui {

struct TopConfig {
  std::chrono::milliseconds interval{1000};
  bool readonly = false;
  // Why actions are off although --readonly was not given (e.g. a procfs of another PID
  // namespace); shown when the user presses k.
  std::optional<std::string> actions_unavailable;
  bool color = true;
  bool mouse = true;
  KillConfig kill;
  // Called on the kill's thread just before its first signal, with the plan and that signal:
  // the cli tells the node's daemon who is about to end what (cli/announce.h).
  AnnounceKill announce;
  // The daemon's snapshots, when the cli may ask it (tui/daemon_feed.h); empty, or a daemon
  // that does not answer: top's own engine samples.
  SnapshotFetch from_daemon;
};

struct TopResult {
  int exit_code = 0;
  // A thread is stuck in the driver or a kill is unfinished: leave with _exit, not exit.
  bool threads_left_behind = false;
  std::optional<core::Error> error;  // printed after the terminal is restored
};

// `backend` is the watchdog inside `collector` (it says when the driver hangs).
TopResult run_top(std::shared_ptr<const collect::Collector> collector,
                  std::shared_ptr<backend::BackendSet> backend, const TopConfig& config);

}  // namespace gpureap::tui
