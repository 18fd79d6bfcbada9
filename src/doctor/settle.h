#pragma once
// When doctor must settle: a second sample, taken --settle after the first, tells memory that
// is still dropping ("releasing") from memory that stays ("leaked"). It only tells something
// when memory may still be moving; otherwise the second sample is taken at once.
#include <optional>

#include "core/snapshot.h"

namespace gpureap::doctor {

// Gone PIDs listed, memory attributed to nobody, a holder stuck in D state, or a distributed job
// with a rank missing. With `gpu`, only
// that GPU's memory counts (a D-state holder the driver lists nowhere may be holding any GPU).
bool needs_settle(const core::Snapshot& first, std::optional<unsigned> gpu);

}  // namespace gpureap::doctor
