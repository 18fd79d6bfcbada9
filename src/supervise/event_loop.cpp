// The event loop's pieces: waiting, signals, reaping, job control.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "supervise/supervisor.h"

namespace gpureap::supervise {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

void Supervisor::wait_and_dispatch(std::optional<Clock::time_point> until) {
  int timeout_ms = -1;
  if (until) {
    auto left = duration_cast<milliseconds>(*until - Clock::now()).count();
    timeout_ms = static_cast<int>(std::clamp<long long>(left + 1, 0, 60'000));
  }
  pollfd p{signals_->fd(), POLLIN, 0};
  int n = ::poll(&p, 1, timeout_ms);
  if (n < 0 && errno != EINTR) return;
  for (const auto& info : signals_->drain()) on_signal(static_cast<int>(info.ssi_signo));
  reap();
}

void Supervisor::on_signal(int signal) {
  switch (signal) {
    case SIGCHLD:
      reap();
      return;
    case SIGCONT:
      resume_job();
      return;
    case SIGTSTP:
      send_to_job(SIGTSTP, ForwardTarget::ProcessGroup);
      return;
    default:
      break;
  }
  if (wait_status_) {
    // CMD is gone; its leftovers are being ended: a terminating signal means "now".
    if (is_terminating(signal)) {
      hurry_ = true;
      ++late_terminating_signals_;
    }
    return;
  }
  send_to_job(signal, forward_target(signal));
  if (is_terminating(signal) && report_.stop.reason == StopReason::None)
    request_stop(StopReason::Signal, signal);
}

void Supervisor::reap() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;  // none ready, or no children left
    // Any other child is an orphan that reparented to gpureap: reaping it is all it needs,
    // unless its end is a failure --fail-fast acts on.
    if (pid != job_ || wait_status_) {
      if (!WIFSTOPPED(status) && !WIFCONTINUED(status)) note_failure(pid, "", status);
      continue;
    }
    if (WIFSTOPPED(status)) {
      job_stopped_ = true;
      follow_stop();
    } else if (WIFCONTINUED(status)) {
      job_stopped_ = false;
    } else {
      wait_status_ = status;
      job_end_ = Clock::now();
    }
  }
}

void Supervisor::send_to_job(int signal, ForwardTarget target) {
  // Once CMD is reaped its PID, and so its group id, may be recycled.
  if (wait_status_) return;
  if (target == ForwardTarget::CommandOnly) {
    ::kill(job_, signal);
    return;
  }
  ::kill(-job_, signal);
  // CMD may have left its group (setpgid, setsid): it still gets the signal.
  auto st = collector_.procfs().read_stat(job_);
  if (st && *st && (*st)->pgid != job_) ::kill(job_, signal);
}

void Supervisor::request_stop(StopReason reason, std::optional<int> signal) {
  auto now = Clock::now();
  report_.stop.reason = reason;
  report_.stop.signal = signal;
  report_.stop.after = duration_cast<milliseconds>(now - job_start_);
  const bool ours = reason == StopReason::Timeout || reason == StopReason::FailFast;
  if (ours) send_to_job(SIGTERM, ForwardTarget::ProcessGroup);
  // A stopped job would not act on the signal until continued.
  if (ours || job_stopped_) send_to_job(SIGCONT, ForwardTarget::ProcessGroup);
  kill_deadline_ = now + options_.grace;
}

void Supervisor::follow_stop() {
  // Only where a shell is watching: PID 1 cannot stop, and without a terminal nobody
  // would continue gpureap.
  if (!terminal_ || !terminal_->interactive() || report_.pid1) return;
  if (terminal_->foreground_group() == job_) terminal_->take_back();
  terminal_->restore_modes();
  ::kill(::getpid(), SIGSTOP);
  // Continued by `fg` or `bg`: the SIGCONT waiting in the signalfd resumes the job.
}

void Supervisor::resume_job() {
  if (wait_status_) return;
  if (terminal_ && terminal_->interactive() && terminal_->gpureap_in_foreground())
    terminal_->give_to(job_);
  send_to_job(SIGCONT, ForwardTarget::ProcessGroup);
}

void Supervisor::begin_cleanup() {
  if (terminal_ && terminal_->interactive()) {
    // Leftovers in the job's group must not keep the terminal; bash restores the modes of
    // a job that was killed or stopped, and so does gpureap.
    if (terminal_->foreground_group() == job_) terminal_->take_back();
    if (WIFSIGNALED(*wait_status_) || job_stopped_) terminal_->restore_modes();
  }
  // The last sample before leftovers are ended: memory they hold counts in the peak.
  if (auto snap = sampling_->fresh(std::chrono::seconds(5))) teardown_->note_devices(*snap);
}

}  // namespace gpureap::supervise
