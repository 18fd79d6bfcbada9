#pragma once
// The `gpureap.policies/v1` document of /api/v1/policies: each cleanup policy, the processes it
// matches and where each stands (waiting for `after`, being acted on, waiting to retry, done,
// given up). Pure, like the other documents.
#include <nlohmann/json.hpp>

#include "policy/runner.h"

namespace gpureap::policy {

nlohmann::json policies_to_json(const policy::PolicyRunner::Status& status,
                                std::chrono::system_clock::time_point now);

}  // namespace gpureap::policy
