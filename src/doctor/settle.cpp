#include "doctor/settle.h"

#include <algorithm>

namespace gpureap::doctor {

bool needs_settle(const core::Snapshot& s, std::optional<unsigned> gpu) {
  auto concerns = [&](const core::ProcessRow& r) {
    return !gpu || r.gpus.empty() ||
           std::any_of(r.gpus.begin(), r.gpus.end(),
                       [&](const core::GpuUse& u) { return u.index == *gpu; });
  };
  for (const auto& r : s.rows)
    if ((!r.process || r.has(core::Anomaly::Uninterruptible)) && concerns(r)) return true;
  for (const auto& g : s.drivers.gpus)
    if ((!gpu || g.index == *gpu) && s.memory_summary(g).unattributed_bytes.value_or(0) > 0)
      return true;
  return false;
}

}  // namespace gpureap::doctor
