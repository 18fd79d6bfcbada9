#pragma once
// The audit record of a policy's decision about one row: who the process was (its full
// identity, as the snapshot knew it), what it held and why the policy matched.
#include <string>

#include "audit/record.h"
#include "core/snapshot.h"
#include "policy/matcher.h"
#include "policy/policy.h"

namespace gpureap::policy {

audit::Record make_record(const Policy& policy, const Evaluation& evaluation,
                          const core::Snapshot& snapshot, bool enforced, std::string event,
                          std::string outcome);

// "PID 4242 (python, user alice)": how log lines name the process of a record.
std::string describe_process(const audit::Record& record);

}  // namespace gpureap::policy
