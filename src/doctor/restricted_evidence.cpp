#include "doctor/restricted_evidence.h"

#include <fmt/format.h>

namespace gpureap::doctor {

void show_restricted_evidence(std::vector<Finding>& findings, Reader reader) {
  for (auto& f : findings) {
    if (f.restricted_evidence.empty()) continue;
    if (reader == Reader::Privileged) {
      f.evidence.insert(f.evidence.end(), f.restricted_evidence.begin(),
                        f.restricted_evidence.end());
    } else {
      const size_t n = f.restricted_evidence.size();
      f.evidence.push_back(fmt::format(
          "{} line{} of logs only root can read {} left out here: `sudo gpureap doctor` shows "
          "{}, as does the daemon to a client that sends its bearer token",
          n, n == 1 ? "" : "s", n == 1 ? "is" : "are", n == 1 ? "it" : "them"));
    }
    f.restricted_evidence.clear();
  }
}

}  // namespace gpureap::doctor
