#pragma once
// What each GPU's ghost memory is and the one command that helps for that case, for every
// view that ends with advice (the ps footer, top's status line). Read from the snapshot's
// ghost verdict only.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::output {

enum class GhostCase {
  Kept,     // live processes keep the contexts: ending them frees the memory
  Leaked,   // nothing alive holds them: only a GPU reset (or a reboot) frees the memory
  Unknown,  // no holder found, but some processes could not be inspected
  Served,   // gone clients whose work a live server (a WorkServer) still runs
};

struct GhostNotice {
  unsigned gpu = 0;
  GhostCase kind = GhostCase::Kept;
  uint64_t bytes = 0;
  std::vector<pid_t> gone;  // the gone PIDs of this case on this GPU
  size_t keepers = 0;       // Kept: live processes that keep them
  std::string headline;     // "8.0 GiB on GPU 0 is held by ghosts (1 process keeps it alive)."
  std::string command;      // the command that really helps, e.g. "gpureap kill 4242"
  // Leaked: why the reset would be refused now, as doctor says it ("reset is blocked by paused
  // PID 300; resume or end it first"); empty when nothing doctor names blocks it.
  std::string blocked;
  // Served: the servers that keep them.
  std::vector<pid_t> servers;
};

std::vector<GhostNotice> ghost_notices(const core::Snapshot& snapshot);

}  // namespace gpureap::output
