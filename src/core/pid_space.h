#pragma once
// Whose processes a view's numbers name. PIDs and start ticks compare only within one boot of
// one kernel, seen from one PID namespace: a view read elsewhere (the node's daemon's, read on
// the host, by a command in a container) names other processes, or none, under the same
// numbers.
#include <cstdint>
#include <optional>
#include <string>

#include "core/snapshot.h"

namespace gpureap::core {

struct PidSpace {
  std::optional<long long> boot_time;     // ProcView::boot_time
  std::optional<uint64_t> pid_namespace;  // ProcView::pid_namespace
};

inline PidSpace pid_space_of(const ProcView& view) {
  return {view.boot_time, view.pid_namespace};
}

// Why numbers read in `theirs` cannot name processes of `ours`, empty when they can: "they
// come from another boot", "… another PID namespace", or that either is unknown.
std::optional<std::string> pid_space_mismatch(const PidSpace& theirs, const PidSpace& ours);

}  // namespace gpureap::core
