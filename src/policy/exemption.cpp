#include "policy/exemption.h"

#include <algorithm>

#include "reap/safety.h"

namespace gpureap::policy {

Exemption exemption_for(const core::Snapshot& snapshot) {
  reap::Caller caller = reap::current_caller(snapshot);
  return [caller](const core::ProcessRow& row) -> std::optional<std::string> {
    if (!row.process) return std::nullopt;
    const auto& p = *row.process;
    if (row.pid == 1) return "PID 1 (init)";
    if (p.stat.is_kernel_thread()) return "a kernel thread";
    if (row.pid == caller.self) return "gpureap itself";
    if (std::find(caller.ancestors.begin(), caller.ancestors.end(), row.pid) !=
        caller.ancestors.end())
      return "gpureap runs under it";
    if (reap::is_protected_process(p)) return "protected (display server or GPU management daemon)";
    return std::nullopt;
  };
}

}  // namespace gpureap::policy
