#pragma once
// The alert about one policy decision or action, from its audit record. Pure.
#include <string>

#include "alert/alert.h"
#include "alert/rule.h"
#include "audit/record.h"

namespace gpureap::alert {

// A PolicyAction rule takes every record of its policy, or of every policy without `policy`.
bool policy_matches(const Rule& rule, const audit::Record& record);

// Labels: alertname, severity, instance, policy, action, outcome, event, pid, comm, user (when
// known), gpu (the GPUs it held memory on, "0,1"); summary and description say what was done
// to whom and what came of it. Firing, starting at the record's time.
Alert policy_alert(const Rule& rule, const audit::Record& record, const std::string& hostname);

}  // namespace gpureap::alert
