#include "engine/held_states.h"

#include <algorithm>

namespace gpureap::engine {
namespace {

enum class Held { Paused, Blocked, Other };

Held held(const core::ProcessStat& st) {
  if (st.is_stopped()) return Held::Paused;
  if (st.state == 'D') return Held::Blocked;
  return Held::Other;
}

}  // namespace

std::vector<pid_t> held_states_moved(const procfs::ProcFs& proc, const core::ProcView& view,
                                     const std::vector<pid_t>& listed) {
  std::vector<pid_t> asked(listed.begin(), listed.end());
  for (const auto& p : view.processes)
    if (p.holds_device() && p.is_live()) asked.push_back(p.stat.pid);
  std::sort(asked.begin(), asked.end());
  asked.erase(std::unique(asked.begin(), asked.end()), asked.end());

  std::vector<pid_t> out;
  for (pid_t pid : asked) {
    const core::HostProcess* was = view.find(pid);
    if (!was || !was->is_live()) continue;
    auto st = proc.read_stat(pid);
    // Gone, garbage, or another process under the number: not a change of state.
    if (!st || !*st || (*st)->start_ticks != was->stat.start_ticks) continue;
    if (held(**st) != held(was->stat)) out.push_back(pid);
  }
  return out;
}

}  // namespace gpureap::engine
