#pragma once
// The one check of a GPU index a user typed (`--gpu N`), shared by every command, so each says
// the same thing: the GPU does not exist, or no driver can say which GPU it is. gpureap never
// guesses a GPU's device file from its index.
#include <optional>
#include <string>

#include "core/result.h"
#include "core/snapshot.h"

namespace gpureap::core {

struct ScopeError {
  Error error;
  // A driver that did not answer might know it: the command exits with its driver status (4),
  // not as for a typo.
  bool driver_down = false;
};

std::optional<ScopeError> check_gpu_index(const Snapshot& snapshot, unsigned index);

// For a GPU its driver did not describe (known from the kernel alone): where its index and
// device file come from, for the user to judge. Empty for a GPU its driver reported.
std::optional<std::string> gpu_identity_source(const Gpu& gpu);

}  // namespace gpureap::core
