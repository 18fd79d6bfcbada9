#pragma once
// The `gpureap.kill/v1` JSON document: the request, the plan, and (unless it is a dry run)
// each target's outcome, the gone PIDs' outcomes, the memory freed per GPU and the timing.
// Stable: later versions add fields, never rename.
#include <nlohmann/json.hpp>

#include "core/snapshot.h"
#include "reap/executor.h"
#include "reap/outcome.h"
#include "reap/plan.h"
#include "reap/verifier.h"

namespace gpureap::reap {

inline constexpr const char* kKillSchema = "gpureap.kill/v1";

struct KillSettings {
  Request request;
  ExecOptions exec;
  VerifyOptions verify;
  bool dry_run = false;
};

// report is null for a plan that was not executed (dry run).
nlohmann::json kill_to_json(const core::Snapshot& snapshot, const Plan& plan,
                            const KillSettings& settings, const Report* report);

}  // namespace gpureap::reap
