#pragma once
// A policy's action, carried out by the reaper with all its safety: the plan is made from
// the sample the decision came from and pinned to the matched identity (PID and start time),
// the protected list holds even though the PID is named, every signal re-checks the start
// time, SIGTERM escalates to SIGKILL after the policy's grace, and the action counts only
// once the driver shows the memory back.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "audit/record.h"
#include "collect/collector.h"
#include "core/snapshot.h"
#include "policy/policy.h"
#include "policy/tracker.h"
#include "reap/world.h"

namespace gpureap::policy {

struct ActionRequest {
  Policy policy;
  Identity identity;
  std::shared_ptr<const core::Snapshot> snapshot;  // the sample the decision was made on
};

struct ActionResult {
  // released, still-held, survived, refused, not-permitted, gone, failed (and the runner's
  // unmatched: a queued action whose match broke before its turn)
  std::string outcome;
  std::optional<uint64_t> released_bytes;
  std::string detail;
  bool retry = false;  // a later attempt could succeed
  // The processes the action sent signals to (a gone PID's keepers), for the audit record.
  std::vector<audit::Signalled> signalled;
};

class ReaperAction {
 public:
  explicit ReaperAction(collect::Collector collector,
                        std::chrono::milliseconds wait_release = std::chrono::seconds(60));

  // Blocks for up to grace + the SIGKILL wait + wait_release. `cancelled` (the daemon is
  // stopping) ends every wait early, and then no SIGKILL follows the SIGTERM.
  ActionResult run(const ActionRequest& request, const std::function<bool()>& cancelled) const;

 private:
  std::shared_ptr<const reap::World> world_;
  std::chrono::milliseconds wait_release_;
};

}  // namespace gpureap::policy
