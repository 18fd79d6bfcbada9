#pragma once
// What doctor says of a distributed job with a rank gone (stalled_job_rules.cpp), shared with
// the views that count such jobs (the metrics, policies).
#include <chrono>
#include <optional>
#include <string>

#include "core/kernel_event.h"
#include "core/snapshot.h"

namespace gpureap::doctor {

// A stalled job whose rank the daemon saw end this long ago is critical by default (the
// daemon's `stalled_job_critical_after`).
inline constexpr std::chrono::milliseconds kStalledJobCriticalAfter = std::chrono::minutes(10);

// When the daemon saw `e` end, on the clock of `view` (its boot time); empty without one.
std::optional<std::chrono::system_clock::time_point> exit_time(const core::ProcView& view,
                                                               const core::RankExit& e);

// The OOM killer's record of the life of `pid` that started at `start_ticks` (and ended by
// `end_ticks`, where known): a record written in that life, latest first; null without one.
const core::OomKill* oom_kill_of(const core::KernelLog* log, const core::ProcView& view, pid_t pid,
                                 uint64_t start_ticks, std::optional<uint64_t> end_ticks);

}  // namespace gpureap::doctor
