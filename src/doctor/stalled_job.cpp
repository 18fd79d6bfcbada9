#include "doctor/stalled_job.h"

namespace gpureap::doctor {

std::optional<std::chrono::system_clock::time_point> exit_time(const core::ProcView& view,
                                                               const core::RankExit& e) {
  if (!view.boot_time || view.ticks_per_second <= 0) return std::nullopt;
  const auto since_boot = std::chrono::duration<double>(static_cast<double>(e.end_ticks) /
                                                        static_cast<double>(view.ticks_per_second));
  return std::chrono::system_clock::time_point(std::chrono::seconds(*view.boot_time)) +
         std::chrono::duration_cast<std::chrono::milliseconds>(since_boot);
}

const core::OomKill* oom_kill_of(const core::KernelLog* log, const core::ProcView& view, pid_t pid,
                                 uint64_t start_ticks, std::optional<uint64_t> end_ticks) {
  if (!log || view.ticks_per_second <= 0) return nullptr;
  const auto tps = static_cast<uint64_t>(view.ticks_per_second);
  for (auto k = log->oom_kills.rbegin(); k != log->oom_kills.rend(); ++k) {
    if (k->pid != pid) continue;
    const uint64_t at = k->since_boot_usec / 1000 * tps / 1000;
    // A tick's slack either side: the clocks round differently.
    if (at + 1 < start_ticks || (end_ticks && at > *end_ticks + tps)) continue;
    return &*k;
  }
  return nullptr;
}

}  // namespace gpureap::doctor
