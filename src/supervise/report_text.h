#pragma once
// The summary `gpureap run` prints on stderr when the job is over: how it ended, peak GPU
// memory, leftovers ended, whether the memory came back. Every line starts "gpureap: " so it
// stands apart from the job's own output; untrusted text is escaped for the terminal.
#include <string>

#include "supervise/run_report.h"

namespace gpureap::supervise {

std::string render_summary(const RunReport& report);
// Only why CMD could not start (or end): printed even with --quiet, as a shell would.
std::string render_error(const RunReport& report);

// "python train.py --lr 0.1", escaped, cut to `width` characters with "…".
std::string command_text(const std::vector<std::string>& argv, size_t width = 80);

}  // namespace gpureap::supervise
