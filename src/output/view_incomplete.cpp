#include "output/view_incomplete.h"

namespace gpureap::output {

std::string incomplete_reason(const core::Snapshot& s) {
  if (s.complete()) return {};
  std::string out;
  for (const auto& f : s.proc.scan_failures) out += (out.empty() ? "" : "; ") + f;
  if (!out.empty()) out = "the holder scan failed, so holders may be missing: " + out;
  if (s.proc.uninspectable > 0 || out.empty())
    out += (out.empty() ? "" : "; ") + std::to_string(s.proc.uninspectable) +
           " processes could not be inspected; run as root or grant CAP_SYS_PTRACE";
  return out;
}

std::string view_incomplete(const core::Snapshot& s) {
  if (s.complete()) return {};
  return "view incomplete: " + incomplete_reason(s);
}

}  // namespace gpureap::output
