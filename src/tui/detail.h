#pragma once
// The detail pane of `top`: everything known about the selected process, then what
// `gpureap doctor` finds about it (evidence, meaning, remedies).
#include <vector>

#include "doctor/examine.h"
#include "tui/frame.h"
#include "tui/view.h"

namespace gpureap::tui {

// The row's process in `evidence.last`, then doctor's findings about it from the whole
// `evidence` (its `first` is the sample before: the doctor tells memory still dropping from
// memory that stays). Lines are wrapped to `width`.
std::vector<Line> detail_lines(const doctor::Evidence& evidence, const ViewRow& row,
                               const Viewer& viewer, size_t width);

// Doctor's findings about `pid`: those `gpureap doctor` gives on the same evidence that name it.
std::vector<doctor::Finding> detail_findings(const doctor::Evidence& evidence, pid_t pid);

}  // namespace gpureap::tui
