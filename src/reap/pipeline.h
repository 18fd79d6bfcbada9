#pragma once
// One reap from start to end: plan → the caller's go-ahead → signal, wait, escalate → verify
// that the memory is back → the report. `gpureap kill`, `doctor --fix`, `top` and the cleanup
// policies all reap through it; each shows what it shows (text, JSON, a dialog, an audit
// record) from the progress callbacks and the result, and none reaches into a collector: the
// reaper reads only its World.
#include <chrono>
#include <functional>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"
#include "reap/executor.h"
#include "reap/outcome.h"
#include "reap/plan.h"
#include "reap/verifier.h"
#include "reap/world.h"

namespace gpureap::reap {

struct ReapOptions {
  ExecOptions exec;
  VerifyOptions verify;
};

// How long to wait after SIGKILL for a grace period: SIGKILL acts at once unless the task
// sleeps in the kernel, so a short, bounded wait (the grace, within 1 to 5 s).
std::chrono::milliseconds kill_wait_for(std::chrono::milliseconds grace);

// What a reap says as it goes; each is optional and called on the reaping thread, in order.
struct Progress {
  std::function<void(const Plan&)> signalling;       // the first signals are about to go
  std::function<void(size_t survivors)> escalating;  // the grace is over: SIGKILL to these
  std::function<void(const std::vector<Execution>&)> awaiting_release;  // every target handled
};

// The caller's go-ahead on a plan: it may show the plan, ask, or amend it (a policy refuses the
// protected processes a named PID would reach); false leaves everything unsignalled.
using GoAhead = std::function<bool(Plan&)>;

struct Reaped {
  Plan plan;
  bool carried_out = false;           // the go-ahead was given and the plan executed
  std::vector<Execution> executions;  // one per plan target, once carried out
  Report report;                      // once carried out
};

class Pipeline {
 public:
  // The world must outlive the pipeline.
  Pipeline(const World& world, ReapOptions options, Progress progress = {})
      : world_(world), options_(std::move(options)), progress_(std::move(progress)) {}

  // The plan for `request` over `snapshot`: the view the decision was made on, so every target
  // stays pinned to the process (PID and start time) that was chosen. Details the snapshot
  // lacks come from the world. Fails on a request that cannot mean anything.
  core::Result<Plan> plan(const core::Snapshot& snapshot, const Request& request) const;

  // Executes and verifies `plan`; `started` (when the reap began) opens the report's timing.
  Reaped carry_out(Plan plan, std::chrono::system_clock::time_point started) const;

  // plan, then the go-ahead, then carry_out when it is given and something is to be signalled.
  core::Result<Reaped> run(const core::Snapshot& snapshot, const Request& request,
                           const GoAhead& go_ahead,
                           std::chrono::system_clock::time_point started) const;

  const ReapOptions& options() const { return options_; }

 private:
  std::vector<NamedThread> typed_threads(const core::Snapshot& snapshot,
                                         const Request& request) const;

  const World& world_;
  ReapOptions options_;
  Progress progress_;
};

}  // namespace gpureap::reap
