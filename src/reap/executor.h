#pragma once
// Executes a plan: signal, wait, escalate. Every target is pinned by its pidfd and its start
// time: the start time in /proc is checked against the plan before every signal, so a PID
// recycled since planning is never signalled. Waiting is poll() on the pidfds, bounded by the
// grace period; a process that survives SIGKILL (uninterruptible sleep) is reported, not
// waited on forever.
#include <signal.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "reap/plan.h"
#include "reap/world.h"

namespace gpureap::reap {

struct ExecOptions {
  int signal = SIGTERM;
  std::chrono::milliseconds grace{10'000};
  bool escalate = true;
  // How long to wait after SIGKILL: it acts at once unless the task is in uninterruptible sleep.
  std::chrono::milliseconds kill_wait{5'000};
  bool force_fallback = false;  // signal by PID even where pidfds exist (tests of that path)
  // Checked while waiting: true ends the wait at once and sends nothing more (a daemon that is
  // stopping neither waits out a grace period nor turns it into a SIGKILL).
  std::function<bool()> cancelled;
  // Called once the grace is over, before SIGKILL goes to the targets still alive (how many).
  std::function<void(size_t survivors)> escalating;
};

enum class ExecStatus {
  NotAttempted,  // not a Signal target
  Exited,        // gone (exited_after says which signal did it; none: before any)
  Survived,      // still alive when we stopped waiting (why says why)
  NotPermitted,  // the kernel refused the signal (EPERM)
  Recycled,      // the PID now belongs to another process: the planned one is gone; not signalled
};

struct Execution {
  pid_t pid = 0;
  ExecStatus status = ExecStatus::NotAttempted;
  std::vector<int> signals;         // sent, in order
  std::optional<int> exited_after;  // last signal sent before it exited
  std::optional<std::chrono::system_clock::time_point> exited_at;
  std::optional<std::chrono::steady_clock::time_point> exited_steady;
  std::optional<char> state;         // for survivors: their state when we stopped
  std::optional<std::string> wchan;  // for survivors in D state
  std::string why;
  bool pidfd = false;  // tracked through a pidfd (else kill() with start-time checks)
};

class Executor {
 public:
  // The probe must outlive the executor.
  Executor(const ProcessProbe& proc, ExecOptions options)
      : proc_(proc), options_(std::move(options)) {}
  // One Execution per plan target, in plan order.
  std::vector<Execution> run(const Plan& plan) const;

 private:
  const ProcessProbe& proc_;
  ExecOptions options_;
};

std::string_view to_string(ExecStatus status);

}  // namespace gpureap::reap
