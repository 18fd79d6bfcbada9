#include "core/orphan.h"

namespace gpureap::core {
namespace {

bool is_namespace_init(const HostProcess& p) {
  if (p.stat.pid == 1) return true;
  return p.details && !p.details->ns_pids.empty() && p.details->ns_pids.back() == 1;
}

// A leader that ended: absent, or a zombie nobody has reaped yet.
bool gone(const ProcView& view, pid_t leader) {
  const HostProcess* p = view.find(leader);
  return !p || p->stat.is_zombie();
}

}  // namespace

std::optional<OrphanEvidence> orphan_evidence(const ProcView& view, const HostProcess& p) {
  using Kind = OrphanEvidence::Kind;
  const ProcessStat& st = p.stat;
  if (is_namespace_init(p) || st.sid == st.pid) return std::nullopt;
  if (auto it = view.exited_parents.find(st.pid); it != view.exited_parents.end())
    return OrphanEvidence{Kind::ParentExited, it->second};
  // A live parent in the job still runs it: a runner whose harness (the group's leader) exited
  // starts its holders in that group. PID 0 is a leader this procfs cannot see.
  const HostProcess* parent = view.find(st.ppid);
  bool live_parent = parent && !parent->stat.is_zombie();
  if (st.pgid > 0 && st.pgid != st.pid && gone(view, st.pgid) &&
      !(live_parent && parent->stat.pgid == st.pgid))
    return OrphanEvidence{Kind::GroupLeaderGone, st.pgid};
  if (st.sid > 0 && gone(view, st.sid) && !(live_parent && parent->stat.sid == st.sid))
    return OrphanEvidence{Kind::SessionLeaderGone, st.sid};
  return std::nullopt;
}

}  // namespace gpureap::core
