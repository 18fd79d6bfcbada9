#pragma once
// One finding per problem. The rules each see one side of a problem: a gone PID listed with
// memory, the worker that keeps it having inherited its files, that worker being an orphan or
// stopped. merge_findings makes those one finding: the gone PID's, with each other rule's view
// of its keepers as a facet (its code, the PID, one line). Findings about one live process
// become one the same way, and the releases seen on one GPU one. The codes stay: a finding
// carries its facets' codes (Finding::has), for --only, the alert rules and the metrics.
#include <vector>

#include "doctor/finding.h"

namespace gpureap::doctor {

void merge_findings(std::vector<Finding>& findings);

}  // namespace gpureap::doctor
