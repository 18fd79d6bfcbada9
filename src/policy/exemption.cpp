#include "policy/exemption.h"

#include <unistd.h>

#include <algorithm>

#include "reap/safety.h"

namespace gpureap::policy {

Exemption exemption_for(const core::Snapshot& snapshot) {
  const pid_t self = ::getpid();
  const std::vector<pid_t> ancestors = reap::own_ancestors(snapshot);
  return [self, ancestors](const core::ProcessRow& row) -> std::optional<std::string> {
    if (!row.process) return std::nullopt;
    const auto& p = *row.process;
    if (row.pid == 1) return "PID 1 (init)";
    if (p.stat.is_kernel_thread()) return "a kernel thread";
    if (row.pid == self) return "gpureap itself";
    if (std::find(ancestors.begin(), ancestors.end(), row.pid) != ancestors.end())
      return "gpureap runs under it";
    // A keeper of a gone job's context is one whatever it runs now (reap::make_target).
    if (row.keeps.empty() && reap::is_protected_process(p))
      return "protected (display server or GPU management daemon)";
    return std::nullopt;
  };
}

}  // namespace gpureap::policy
