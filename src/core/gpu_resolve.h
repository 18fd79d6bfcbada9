#pragma once
// The one resolver of a GPU that a user or a policy names, shared by every path that scopes
// by GPU (`doctor`, `kill`, `ps`, the daemon's socket, `policy test`): "N", "N/G", "N/G/C", or
// a GPU's or an instance's UUID is parsed (parse_gpu_option), resolved against the snapshot
// (resolve_gpu_ref) and its GPU checked (check_gpu_index), so a bad or unknown GPU is refused
// in the same words wherever it is named.
#include <optional>
#include <string>

#include "core/gpu_index.h"
#include "core/gpu_place.h"
#include "core/snapshot.h"

namespace gpureap::core {

struct GpuResolution {
  // Where the text points. With a problem that is only a driver that did not answer
  // (ScopeError::driver_down), the place as written: a command that can work from /proc alone
  // may go on with it.
  GpuPlace place;
  std::optional<ScopeError> problem;  // empty: the snapshot has that GPU (and instance)
};

GpuResolution resolve_gpu(const Snapshot& snapshot, const std::string& text);

}  // namespace gpureap::core
