#pragma once
// The one way to examine what was collected. Every path that shows doctor's findings (the
// doctor command, its early "found so far" lines, its report on the evidence the daemon's local
// socket sends, the daemon's samples, top's detail pane) gives examine() the evidence it holds
// and the scope it answers for, so the same evidence gets the same findings on every path: none
// builds the rules' input itself.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu_place.h"
#include "core/kernel_event.h"
#include "core/snapshot.h"
#include "doctor/finding.h"
#include "doctor/restricted_evidence.h"
#include "doctor/stalled_job.h"
#include "doctor/unattributed_threshold.h"
#include "procfs/ipc_residue.h"

namespace gpureap::collect {
class Collector;
}

namespace gpureap::doctor {

// What was collected about one moment. The snapshots are shared, never copied: the daemon's
// sample and top's engine hold them already.
struct Evidence {
  std::shared_ptr<const core::Snapshot> first;    // taken --settle before `last`, or `last` itself
  std::shared_ptr<const core::Snapshot> last;     // the one reported
  std::shared_ptr<const procfs::IpcResidue> ipc;  // host-memory residue; null: not looked for
  std::shared_ptr<const core::KernelLog> kernel;  // the kernel log's GPU errors; null: not read
  std::vector<core::BlockedTask> blocked;         // why `last`'s D-state processes are stuck
  // The tail of the log of the daemon that starts other processes' GPU servers (WorkServer), read
  // only when wants_work_server_log() says the findings use it.
  std::vector<std::string> work_server_log;
};

// What a reader asked about, and who reads.
struct Scope {
  std::optional<unsigned> gpu;             // only findings about this GPU (and global ones)
  std::optional<core::GpuPlace> instance;  // ... and of processes, only those in this instance
  std::vector<FindingCode> only;           // only these codes; empty: every code
  UnattributedThreshold unattributed{};
  // How long after a rank's exit a stalled job's finding turns critical.
  std::chrono::milliseconds stalled_job_critical_after = kStalledJobCriticalAfter;
  // Who reads the findings (restricted_evidence.h); empty: the restricted lines stay apart, for
  // each later view to decide (the daemon's sample, which every view shares).
  std::optional<Reader> reader;
};

// Processes gpureap never kills unless named (the reaper's list: reap::is_protected_process).
using IsProtected = std::function<bool(const core::HostProcess&)>;

std::vector<Finding> examine(const Evidence& evidence, const Scope& scope,
                             const IsProtected& is_protected);

// Whether the kernel log names a recent fault of a live server of other processes' work (an
// WorkServer): only then do the findings use Evidence::work_server_log, so only then is that
// log worth reading.
bool wants_work_server_log(const Evidence& evidence);

// The evidence a collector reads beside two snapshots it took: the kernel log, the blocked
// tasks of `last`, and the work server's log when wanted. `ipc` is what the caller found (its
// engine looks for it on its own schedule); null: none was looked for.
Evidence read_evidence(const collect::Collector& collector,
                       std::shared_ptr<const core::Snapshot> first,
                       std::shared_ptr<const core::Snapshot> last,
                       std::shared_ptr<const procfs::IpcResidue> ipc);

}  // namespace gpureap::doctor
