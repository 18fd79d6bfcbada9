#include "supervise/release_check.h"

#include <algorithm>

#include "core/duration.h"

namespace gpureap::supervise {

void judge_release(const core::Snapshot& snapshot, const IsJobProcess& is_job, ReleaseCheck& c) {
  c.method = snapshot.drivers.any_available() ? "driver" : "device-files";
  c.memory.clear();
  if (snapshot.drivers.any_available()) c.memory = memory_held_by_job(snapshot, is_job);
  c.files = files_held_by_job(snapshot, is_job);
  c.released = c.memory.empty() && c.files.empty();
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
