#include "supervise/release_check.h"

#include <algorithm>

#include "core/duration.h"

namespace gpureap::supervise {

namespace {

// Why the scan cannot say that no process of the job holds a GPU device file: it could not read
// every process's open files for want of gpureap's own descriptors or memory (any process, the
// job's too, may be among them), or a live process of the job kept its files from gpureap.
// Other users' unreadable processes are not the job's and change nothing. Empty: it can.
std::optional<core::Error> unseen_job_files(const core::Snapshot& s, const IsJobProcess& is_job) {
  if (!s.proc.scan_failures.empty()) {
    std::string failures;
    for (const auto& f : s.proc.scan_failures) failures += (failures.empty() ? "" : "; ") + f;
    return core::Error{"no driver answered, and the holder scan failed: " + failures,
                       "processes of the job may still hold GPU device files; `gpureap ps` "
                       "shows them once gpureap can read every process"};
  }
  size_t unread = 0;
  for (const auto& p : s.proc.processes)
    if (p.is_live() && !p.fds_readable && is_job(p.stat.pid, p.stat.start_ticks)) ++unread;
  if (unread == 0) return std::nullopt;
  return core::Error{"no driver answered, and " + std::to_string(unread) + " process" +
                         (unread == 1 ? "" : "es") +
                         " of the job could not be inspected (their open files are not readable)",
                     "run gpureap as root or grant it CAP_SYS_PTRACE"};
}

}  // namespace

void judge_release(const core::Snapshot& snapshot, const IsJobProcess& is_job, ReleaseCheck& c) {
  const bool driver = snapshot.drivers.any_available();
  c.method = driver ? "driver" : "device-files";
  c.memory.clear();
  if (driver) c.memory = memory_held_by_job(snapshot, is_job);
  c.files = files_held_by_job(snapshot, is_job);
  c.released = c.memory.empty() && c.files.empty();
  c.error.reset();
  // The driver's lists answer for the memory; without them "nothing held" is only as good as
  // the scan that saw nothing. A file seen held is held whatever the scan missed.
  if (c.released && !driver) {
    c.error = unseen_job_files(snapshot, is_job);
    if (c.error) c.released = false;
  }
}

ReleaseCheck verify_release(JobSampling& sampling, const IsJobProcess& is_job,
                            std::chrono::milliseconds timeout, const Pause& pause) {
  using Clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  ReleaseCheck c;
  c.timeout = timeout;
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  milliseconds gap{25};
  for (;;) {
    auto remaining = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    // At least one answer even with --release-timeout 0; a hung driver costs this bound.
    auto snap = sampling.fresh(std::max(remaining, milliseconds(5000)));
    if (!snap) {
      if (!c.performed)
        c.skipped_because = "the GPU backend did not answer within " +
                            core::format_duration(std::max(remaining, milliseconds(5000)));
      return c;
    }
    c.performed = true;
    judge_release(*snap, is_job, c);
    auto now = Clock::now();
    if (c.released) {
      c.took = std::chrono::duration_cast<milliseconds>(now - start);
      return c;
    }
    if (now >= deadline) return c;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - now);
    if (!pause(std::min(gap, left))) {
      c.skipped_because = "interrupted by a signal before the memory was released";
      return c;
    }
    gap = std::min(gap * 2, milliseconds(500));
  }
}

}  // namespace gpureap::supervise
