#pragma once
// What of the driver's report decides whether /proc must be scanned again at once: which PIDs
// it lists on which GPU, and the memory it attributes to nobody. When either moves, the
// holder scan runs now instead of at its next interval, so a new or vanished process is
// explained within one sample.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/gpu.h"

namespace gpureap::engine {

struct DriverView {
  bool available = false;
  std::vector<std::pair<unsigned, pid_t>> listed;           // (GPU index, PID), sorted
  std::vector<std::pair<unsigned, uint64_t>> unattributed;  // (GPU index, bytes), known ones

  bool operator==(const DriverView&) const = default;
};

DriverView driver_view(const core::DriverReading& drivers);

// Unattributed memory moving by less than this is allocator noise, not a context that
// appeared or went.
inline constexpr uint64_t kUnattributedMoveBytes = 16ull << 20;

// True when the PIDs listed changed, a GPU's unattributed memory moved by at least
// kUnattributedMoveBytes (or became known / unknown), or the driver came up or went down.
bool driver_view_moved(const DriverView& before, const DriverView& now);

}  // namespace gpureap::engine
