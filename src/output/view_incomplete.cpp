#include "output/view_incomplete.h"

namespace gpureap::output {

std::string view_incomplete(const core::Snapshot& s) {
  if (s.complete()) return {};
  return "view incomplete: " + std::to_string(s.proc.uninspectable) +
         " processes could not be inspected; run as root or grant CAP_SYS_PTRACE";
}

}  // namespace gpureap::output
