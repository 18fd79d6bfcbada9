#include "engine/driver_view.h"

#include <algorithm>

namespace gpureap::engine {

DriverView driver_view(const core::DriverReading& drivers) {
  DriverView v;
  v.available = drivers.any_available();
  for (const auto& g : drivers.gpus) {
    uint64_t attributed = 0;
    for (const auto& p : g.processes) {
      v.listed.emplace_back(g.index, p.pid);
      attributed += p.used_bytes.value_or(0);
    }
    if (g.memory.used_bytes)
      v.unattributed.emplace_back(
          g.index, *g.memory.used_bytes > attributed ? *g.memory.used_bytes - attributed : 0);
  }
  std::sort(v.listed.begin(), v.listed.end());
  v.listed.erase(std::unique(v.listed.begin(), v.listed.end()), v.listed.end());
  std::sort(v.unattributed.begin(), v.unattributed.end());
  return v;
}

bool driver_view_moved(const DriverView& before, const DriverView& now) {
  if (before.available != now.available || before.listed != now.listed) return true;
  if (before.unattributed.size() != now.unattributed.size()) return true;
  for (size_t i = 0; i < now.unattributed.size(); ++i) {
    const auto& [g0, b0] = before.unattributed[i];
    const auto& [g1, b1] = now.unattributed[i];
    if (g0 != g1) return true;
    if ((b0 > b1 ? b0 - b1 : b1 - b0) >= kUnattributedMoveBytes) return true;
  }
  return false;
}

}  // namespace gpureap::engine
