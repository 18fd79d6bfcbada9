#pragma once
// The human forms of a kill: the plan (shown before anything is signalled, and asked about on a
// terminal) and the results with a summary line of the memory freed per GPU.
#include <optional>
#include <string>

#include "core/snapshot.h"
#include "output/style.h"
#include "reap/outcome.h"
#include "reap/plan.h"
#include "reap/report_json.h"

namespace gpureap::output {

// The snapshot the plan was made from: an incomplete view is said under the plan.
std::string render_plan(const core::Snapshot& snapshot, const reap::Plan& plan,
                        const reap::KillSettings& settings, const Style& style,
                        std::optional<size_t> width);

std::string render_results(const reap::Plan& plan, const reap::Report& report, const Style& style,
                           std::optional<size_t> width);

}  // namespace gpureap::output
