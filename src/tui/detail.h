#pragma once
// The detail pane of `top`: everything known about the selected process, then what
// `gpureap doctor` finds about it (evidence, meaning, remedies).
#include <vector>

#include "core/snapshot.h"
#include "tui/frame.h"
#include "tui/view.h"

namespace gpureap::tui {

// `previous`: the sample before `s` (the doctor tells memory still dropping from memory that
// stays); may be null. Lines are wrapped to `width`.
std::vector<Line> detail_lines(const core::Snapshot& s, const core::Snapshot* previous,
                               const ViewRow& row, const Viewer& viewer, size_t width);

}  // namespace gpureap::tui
