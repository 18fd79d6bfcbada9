#include "output/job_notice.h"

#include <algorithm>

#include "doctor/diagnose.h"
#include "text/escape.h"

namespace gpureap::output {

std::vector<StalledJobNotice> stalled_job_notices(const core::Snapshot& s) {
  std::vector<doctor::Finding> found;
  doctor::stalled_job_rules({s, s, {}, std::nullopt, {}}, found);
  std::vector<StalledJobNotice> out;
  for (const auto& f : found) {
    // A view of some rows (`ps --user bob`) shows only the jobs of those rows.
    if (std::none_of(f.pids.begin(), f.pids.end(), [&](pid_t p) { return s.row(p); })) continue;
    out.push_back(
        {f.pids.front(), f.memory_bytes, text::terminal_safe(f.summary),
         f.remedy.empty() ? std::string() : text::terminal_safe(f.remedy.front().command)});
  }
  return out;
}

}  // namespace gpureap::output
