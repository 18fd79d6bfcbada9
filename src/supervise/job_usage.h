#pragma once
// What the job holds on the GPUs in one snapshot: memory the driver lists for its processes
// (per GPU) and device files its live processes keep open. Pure functions of a Snapshot.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/snapshot.h"
#include "supervise/run_report.h"

namespace gpureap::supervise {

// Whether (pid, start time) is a job process; an empty start time means the process is gone
// from /proc (the driver may still list it), so the PID alone decides.
using IsJobProcess = std::function<bool(pid_t, std::optional<uint64_t>)>;

struct JobGpuUse {
  unsigned index = 0;
  uint64_t bytes = 0;    // sum of the known per-process amounts
  size_t processes = 0;  // job processes the driver lists on this GPU
};

// One entry per GPU that lists at least one job process, by GPU index.
std::vector<JobGpuUse> job_gpu_usage(const core::Snapshot& snapshot, const IsJobProcess& is_job);

// Driver entries of job processes (after teardown: memory not yet released).
std::vector<HeldMemory> memory_held_by_job(const core::Snapshot& snapshot,
                                           const IsJobProcess& is_job);

// Live job processes holding GPU device files.
std::vector<HeldFiles> files_held_by_job(const core::Snapshot& snapshot,
                                         const IsJobProcess& is_job);

}  // namespace gpureap::supervise
