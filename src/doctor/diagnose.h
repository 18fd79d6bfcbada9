#pragma once
// `gpureap doctor`: rules over two snapshots taken --settle apart (the second is the one
// reported; the first tells memory that is still dropping from memory that stays).
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu_place.h"
#include "core/kernel_event.h"
#include "core/snapshot.h"
#include "doctor/finding.h"
#include "doctor/stalled_job.h"
#include "doctor/unattributed_threshold.h"
#include "procfs/ipc_residue.h"

namespace gpureap::backend {
struct BackendEntry;
}

namespace gpureap::doctor {

struct DoctorInput {
  const core::Snapshot& first;
  const core::Snapshot& last;
  procfs::IpcResidue ipc;
  std::optional<unsigned> gpu;  // --gpu N: only findings about that GPU (and global ones)
  // Processes gpureap never kills unless named (persistence daemon, DCGM, display servers).
  std::function<bool(const core::HostProcess&)> is_protected;
  UnattributedThreshold unattributed{};
  // The kernel log's GPU errors; null or unread: none are reported.
  const core::KernelLog* kernel = nullptr;
  // Why the D-state processes of `last` are stuck (Collector::blocked_tasks).
  std::vector<core::BlockedTask> blocked;
  // The backends whose words the remedies use (their vendors' commands); null: the built-in.
  const std::vector<backend::BackendEntry>* backends = nullptr;
  // The last lines of the log of the daemon that starts the servers of other processes' work
  // (WorkServer::log_files), as read; each is escaped like every fact.
  std::vector<std::string> work_server_log;
  // --gpu N/G (or N/G/C), with `gpu` N: of the findings about processes, only those about one
  // in that instance (core::in_place); the GPU's own findings stay.
  std::optional<core::GpuPlace> instance;
  // A stalled job whose rank the daemon saw end this long ago is critical (a one-shot scan
  // does not know when a rank ended: its finding stays a warning).
  std::chrono::milliseconds stalled_job_critical_after = kStalledJobCriticalAfter;
};

std::vector<Finding> diagnose(const DoctorInput& input);

// Whether the kernel log names a recent fault of a live server of other processes' work (an
// WorkServer): only then does diagnose() use DoctorInput::work_server_log, so only then is the
// log worth reading.
bool wants_work_server_log(const DoctorInput& input);

// The rule families, each a pure function of the input (exposed for tests).
void driver_rules(const DoctorInput& in, std::vector<Finding>& out);
void ghost_rules(const DoctorInput& in, std::vector<Finding>& out);
void holder_rules(const DoctorInput& in, std::vector<Finding>& out);
void ipc_rules(const DoctorInput& in, std::vector<Finding>& out);
void kernel_rules(const DoctorInput& in, std::vector<Finding>& out);
// Distributed jobs with a rank gone (core/distributed_job.h): stalled-job.
void stalled_job_rules(const DoctorInput& in, std::vector<Finding>& out);
// Distributed jobs with a rank missing whose launcher does not reap a child that nothing shows
// was that rank: unreaped-zombies, about the launcher (a doubt, never acted on).
void unproven_rank_end_rules(const DoctorInput& in, std::vector<Finding>& out);

}  // namespace gpureap::doctor
