#include "doctor/settle.h"

#include <algorithm>

#include "core/distributed_job.h"

namespace gpureap::doctor {

bool needs_settle(const core::Snapshot& s, std::optional<unsigned> gpu) {
  auto concerns = [&](const core::ProcessRow& r) {
    return !gpu || r.gpus.empty() ||
           std::any_of(r.gpus.begin(), r.gpus.end(),
                       [&](const core::GpuUse& u) { return u.index == *gpu; });
  };
  for (const auto& r : s.rows)
    if ((!r.process || r.has(core::Anomaly::Uninterruptible)) && concerns(r)) return true;
  // A job with a rank missing: the second sample tells a rank that is starting from one that is
  // gone, and shows whether the others compute or wait (their CPU time).
  for (const auto& job : core::distributed_jobs(s.proc))
    if (!job.missing.empty() && !job.elastic_agent) return true;
  for (const auto& g : s.drivers.gpus)
    if ((!gpu || g.index == *gpu) && s.memory_summary(g).unattributed_bytes.value_or(0) > 0)
      return true;
  return false;
}

}  // namespace gpureap::doctor
