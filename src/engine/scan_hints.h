#pragma once
// What an event source knows has changed on the machine since the last scan (the daemon's
// holder tracker: a GPU file opened or finally closed, a holder forked): the engine scans at
// once, reading those processes' fd tables too, instead of waiting for the holder-scan
// interval. Called on the engine's thread.
#include <sys/types.h>

#include <map>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::engine {

struct ScanRequest {
  std::vector<pid_t> pids;  // processes whose open files changed: read their fd tables
  bool full = false;        // events were lost: read every process's fd table
  // Processes of the latest view the kernel saw end: read again at this collection and each
  // after until /proc shows them gone (what was read at the exit may be a zombie, or one still
  // exiting). Asks for no scan by itself.
  std::vector<pid_t> exited;
  bool empty() const { return pids.empty() && !full; }
};

class ScanHints {
 public:
  virtual ~ScanHints() = default;
  // What changed since the last call; asked once per collection.
  virtual ScanRequest take() = 0;
  // A scan finished (`full`: every fd table was read): the holders it found.
  virtual void scanned(const core::ProcView& view, bool full) = 0;
  // Processes it saw forked by a parent that has exited since, with that parent
  // (core::ProcView::exited_parents); asked once per collection.
  virtual std::map<pid_t, pid_t> exited_parents() const { return {}; }
  // The ends it saw of holders, by PID (core::ProcView::ends); asked once per collection.
  virtual std::map<pid_t, std::vector<core::ProcessEnd>> ends() const { return {}; }
};

}  // namespace gpureap::engine
