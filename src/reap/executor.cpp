#include "reap/executor.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "reap/arguments.h"
#include "reap/pidfd.h"
#include "reap/safety.h"

namespace gpureap::reap {
namespace {

using Clock = std::chrono::steady_clock;

// Without pidfds, exit cannot be waited on for a process that is not our child: check /proc
// at this interval instead. Only kernels older than 5.3 take this path.
constexpr std::chrono::milliseconds kFallbackPoll{20};
// How often a wait that can be cancelled checks whether it is.
constexpr std::chrono::milliseconds kCancelPoll{100};

// A target in flight: its handle and what happened to it.
struct Tracked {
  const Target* target;
  Pidfd handle;
  Execution* exec;
  bool done() const { return exec->status != ExecStatus::NotAttempted; }
};

class Run {
 public:
  Run(const ProcessProbe& proc, const ExecOptions& o) : proc_(proc), o_(o) {}

  std::vector<Execution> execute(const Plan& plan) {
    std::vector<Execution> out(plan.targets.size());
    for (size_t i = 0; i < plan.targets.size(); ++i) {
      out[i].pid = plan.targets[i].pid;
      if (plan.targets[i].action != Action::Signal) continue;
      Pidfd h = o_.force_fallback ? Pidfd::fallback(out[i].pid) : Pidfd::open(out[i].pid);
      out[i].pidfd = h.status() == Pidfd::Status::Opened;
      tracked_.push_back({&plan.targets[i], std::move(h), &out[i]});
    }
    // The pidfds are open before the first start-time check: if the check passes, each pidfd
    // refers to the planned process, whatever happens to the PID afterwards.
    for (auto& t : tracked_) send(t, o_.signal, /*first=*/true);
    wait_for_exits(o_.grace);
    if (o_.escalate && o_.signal != SIGKILL && pending() && !cancelled()) {
      if (o_.escalating) o_.escalating(survivors());
      for (auto& t : tracked_)
        if (!t.done()) send(t, SIGKILL, false);
      wait_for_exits(o_.kill_wait);
    }
    for (auto& t : tracked_)
      if (!t.done()) survived(t);
    return out;
  }

 private:
  bool cancelled() const { return o_.cancelled && o_.cancelled(); }

  size_t survivors() const {
    return std::count_if(tracked_.begin(), tracked_.end(),
                         [](const Tracked& t) { return !t.done(); });
  }

  bool pending() const {
    return std::any_of(tracked_.begin(), tracked_.end(),
                       [](const Tracked& t) { return !t.done(); });
  }

  void exited(Tracked& t) {
    t.exec->status = ExecStatus::Exited;
    t.exec->exited_at = std::chrono::system_clock::now();
    t.exec->exited_steady = Clock::now();
    // The signal that made it exit; SIGCONT only let a stopped process act on the one before.
    const auto& sent = t.exec->signals;
    auto acting = std::find_if(sent.rbegin(), sent.rend(),
                               [&](int s) { return s != SIGCONT || s == o_.signal; });
    if (acting != sent.rend()) t.exec->exited_after = *acting;
  }

  // The state of the planned process while its PID still names it, alive; otherwise empty,
  // and the target is marked (exited, recycled, or unverifiable).
  std::optional<char> still_planned(Tracked& t) {
    if (t.handle.status() == Pidfd::Status::Gone || t.handle.exited()) {
      exited(t);
      return std::nullopt;
    }
    auto st = proc_.stat(t.target->pid);
    if (st.ok() && *st && (*st)->start_ticks != t.target->start_ticks) {
      t.exec->status = ExecStatus::Recycled;
      t.exec->why = "PID " + std::to_string(t.target->pid) + " now belongs to another process (" +
                    (*st)->comm + ", started at tick " + std::to_string((*st)->start_ticks) +
                    ", planned " + std::to_string(t.target->start_ticks) + "): not signalled";
      return std::nullopt;
    }
    // Start times count clock ticks (10 ms at 100 Hz): a PID freed and handed out again within
    // one tick keeps the planned start time. The process's name tells them apart then; a
    // planned process that renamed itself or exec'd since is left alone too, the safe side.
    if (st.ok() && *st && !t.target->comm.empty() && (*st)->comm != t.target->comm &&
        !(*st)->is_zombie()) {
      t.exec->status = ExecStatus::Recycled;
      t.exec->why = "PID " + std::to_string(t.target->pid) + " now runs " + (*st)->comm +
                    ", planned " + t.target->comm + " (the same start tick, " +
                    std::to_string(t.target->start_ticks) +
                    "): another process, or the planned one renamed; not signalled";
      return std::nullopt;
    }
    if (!st.ok()) {
      // Without a start time the PID cannot be pinned to the plan: never signal blind.
      t.exec->status = ExecStatus::Survived;
      t.exec->why =
          "its start time could not be checked (" + st.error().message + "): not signalled";
      return std::nullopt;
    }
    if (!*st || (*st)->is_zombie()) {  // gone, or exited and not yet reaped
      exited(t);
      return std::nullopt;
    }
    // /proc/TID/stat answers for a thread as for a process, and kill() by a thread's id signals
    // its whole process: without a pidfd (which the kernel opens for a process alone, so an
    // opened one names no thread), the number must be a process's now, whoever's thread it is.
    if (t.handle.status() != Pidfd::Status::Opened)
      if (auto group = proc_.thread_group_of(t.target->pid)) {
        t.exec->status = ExecStatus::Recycled;
        t.exec->why = "PID " + std::to_string(t.target->pid) + " is now a thread of process " +
                      std::to_string(*group) +
                      ", not a process: a signal to it would reach that whole process; "
                      "not signalled";
        return std::nullopt;
      }
    return (*st)->state;
  }

  void send(Tracked& t, int signal, bool first) {
    if (t.done()) return;
    std::optional<char> state = still_planned(t);
    if (!state) return;
    // Planned on a snapshot that may predate the shell gpureap runs in: the ancestors are read
    // again now, and one of them is never signalled.
    auto ancestors = own_ancestors(proc_);
    if (std::find(ancestors.begin(), ancestors.end(), t.target->pid) != ancestors.end()) {
      t.exec->status = ExecStatus::Survived;
      t.exec->why = "gpureap runs under it (an ancestor, now): not signalled";
      return;
    }
    int err = t.handle.send_signal(signal);
    if (err == ESRCH) return exited(t);
    if (err == EPERM) {
      t.exec->status = ExecStatus::NotPermitted;
      t.exec->why = "the kernel refused " + signal_name(signal) +
                    " (not permitted): run as root or as the process's owner";
      return;
    }
    if (err != 0) {
      t.exec->status = ExecStatus::Survived;
      t.exec->why = signal_name(signal) + " could not be sent: " + std::strerror(err);
      return;
    }
    t.exec->signals.push_back(signal);
    // A stopped process keeps a SIGTERM pending until it runs again: resume it so it can act.
    bool stopped = t.target->state == 'T' || *state == 'T';
    if (first && stopped && signal != SIGKILL && signal != SIGCONT && still_planned(t)) {
      if (t.handle.send_signal(SIGCONT) == 0) t.exec->signals.push_back(SIGCONT);
    }
  }

  void wait_for_exits(std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<Tracked*> owners;
      bool fallback = false;
      for (auto& t : tracked_) {
        if (t.done()) continue;
        if (t.handle.status() == Pidfd::Status::Opened) {
          fds.push_back({t.handle.fd(), POLLIN, 0});
          owners.push_back(&t);
        } else {
          fallback = true;
          still_planned(t);  // marks it exited once /proc no longer shows it alive
        }
      }
      if (!pending() || cancelled()) return;
      auto now = Clock::now();
      if (now >= deadline) return;
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
      if (fallback) left = std::min(left, kFallbackPoll);
      if (o_.cancelled) left = std::min(left, kCancelPoll);
      int n = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
      if (n < 0 && errno != EINTR) return;
      for (size_t i = 0; n > 0 && i < fds.size(); ++i)
        if (fds[i].revents != 0) exited(*owners[i]);
    }
  }

  void survived(Tracked& t) {
    Execution& e = *t.exec;
    e.status = ExecStatus::Survived;
    auto st = proc_.stat(t.target->pid);
    if (st.ok() && *st) e.state = (*st)->state;
    if (e.state == 'D') {
      if (auto d = proc_.details(t.target->pid, true)) e.wchan = d->wchan;
      e.why = "in uninterruptible sleep (D)" + (e.wchan ? " in " + *e.wchan : std::string()) +
              ": signals act only when that kernel call returns; fix the I/O it waits for "
              "(storage, NFS, the GPU driver) or reboot";
    } else if (std::find(e.signals.begin(), e.signals.end(), SIGKILL) != e.signals.end()) {
      e.why = "still alive " + std::to_string(o_.kill_wait.count()) + " ms after SIGKILL (state " +
              std::string(1, e.state.value_or('?')) + ")";
    } else if (cancelled()) {
      e.why = "gpureap stopped before the grace after " + signal_name(o_.signal) +
              " ended; nothing more was sent";
    } else {
      e.why = "did not exit within the " + std::to_string(o_.grace.count()) + " ms grace after " +
              signal_name(o_.signal) +
              (o_.escalate ? std::string() : "; --no-escalate kept it from SIGKILL");
    }
  }

  const ProcessProbe& proc_;
  const ExecOptions& o_;
  std::vector<Tracked> tracked_;
};

}  // namespace

std::vector<Execution> Executor::run(const Plan& plan) const {
  return Run(proc_, options_).execute(plan);
}

std::string_view to_string(ExecStatus status) {
  switch (status) {
    case ExecStatus::NotAttempted:
      return "not-attempted";
    case ExecStatus::Exited:
      return "exited";
    case ExecStatus::Survived:
      return "survived";
    case ExecStatus::NotPermitted:
      return "not-permitted";
    case ExecStatus::Recycled:
      return "recycled";
  }
  return "";  // no enumerator: no name
}

}  // namespace gpureap::reap
