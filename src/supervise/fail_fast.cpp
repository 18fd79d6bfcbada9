// `run --fail-fast`: a job whose processes wait for each other (the ranks of a distributed job)
// hangs when one of them dies and its launcher does not end the others. gpureap sees the
// abnormal exit (a zombie the job's launcher has not reaped yet, or an orphan gpureap reaps
// itself) and ends the whole job once the grace has passed, if the job still holds a GPU.
#include <sys/wait.h>

#include "core/wait_status.h"
#include "supervise/supervisor.h"

namespace gpureap::supervise {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

namespace {
// How often the job's processes are looked at for exits: one read of every process's stat.
constexpr milliseconds kWatchInterval{250};
}  // namespace

void Supervisor::note_failure(pid_t pid, const std::string& comm, int wait_status) {
  if (!options_.fail_fast || report_.failed || wait_status_ || !core::abnormal_end(wait_status))
    return;
  FailedProcess f;
  f.pid = pid;
  f.comm = comm;
  if (WIFSIGNALED(wait_status)) f.signal = WTERMSIG(wait_status);
  if (WIFEXITED(wait_status)) f.status = WEXITSTATUS(wait_status);
  const auto now = Clock::now();
  f.at = duration_cast<milliseconds>(now - job_start_);
  report_.failed = f;
  fail_fast_at_ = now + *options_.fail_fast;
}

bool Supervisor::job_holds_gpu_files() {
  auto snap = sampling_->fresh(std::chrono::seconds(5));
  if (!snap) return true;  // the driver or the scan did not answer: act as asked
  for (const auto& p : snap->proc.processes)
    if (p.is_live() && p.holds_gpu_file() && members_->contains(p.stat.pid, p.stat.start_ticks))
      return true;
  return false;
}

void Supervisor::watch_for_failures(Clock::time_point now) {
  if (!options_.fail_fast || wait_status_ || report_.stop.reason != StopReason::None) return;
  if (!report_.failed && now >= next_failure_watch_) {
    next_failure_watch_ = now + kWatchInterval;
    // /proc unread (gpureap out of descriptors): looked at again at the next watch.
    if (auto all = read_all_stats(collector_.procfs())) {
      members_->observe(*all);
      // A zombie below CMD: a process whose parent, in the job, has not reaped it yet.
      for (const auto& st : descendants_of(job_, *all))
        if (st.state == 'Z')
          if (auto status = collector_.procfs().read_exit_status(st.pid)) {
            note_failure(st.pid, st.comm, *status);
            if (report_.failed) break;
          }
    }
  }
  if (fail_fast_at_ && now >= *fail_fast_at_) {
    fail_fast_at_.reset();
    if (!job_holds_gpu_files()) return;
    report_.failed->ended_job = true;
    request_stop(StopReason::FailFast, std::nullopt);
  }
}

}  // namespace gpureap::supervise
