#include "reap/planner.h"

#include <algorithm>

#include "procfs/user_names.h"
#include "reap/kin.h"
#include "reap/safety.h"
#include "reap/select.h"

namespace gpureap::reap {
namespace {

Target make_target(const core::Snapshot& snap, const core::HostProcess& p,
                   std::vector<Reason> reasons, const DetailsSource& details) {
  Target t;
  t.pid = p.stat.pid;
  t.start_ticks = p.stat.start_ticks;
  t.comm = p.stat.comm;
  t.state = p.stat.state;
  t.pgid = p.stat.pgid;
  t.reasons = std::move(reasons);
  std::optional<core::ProcessDetails> d = p.details ? p.details.optional() : details(p);
  // Protection never hides keeper evidence: a process that keeps a gone job's context is its
  // keeper, whatever program it runs now (a keeper can exec a protected one).
  const core::ProcessRow* own_row = snap.row(p.stat.pid);
  const bool keeper = own_row && own_row->process && !own_row->keeps.empty();
  t.protected_process = !keeper && is_protected(p.stat.comm, d);
  if (d) {
    t.cmdline = d->cmdline;
    t.uid = d->uid;
    t.user = d->user;
  }
  if (const core::ProcessRow* row = snap.row(p.stat.pid); row && row->listed_by_driver)
    t.gpus = row->gpus;
  for (const auto& r : t.reasons)
    if (r.kind == ReasonKind::InheritedHolder && r.pid &&
        std::find(t.keeps.begin(), t.keeps.end(), *r.pid) == t.keeps.end())
      t.keeps.push_back(*r.pid);
  t.parent.pid = p.stat.ppid;
  if (const core::HostProcess* parent = snap.find(p.stat.ppid)) t.parent.comm = parent->stat.comm;
  return t;
}

std::vector<GpuBaseline> baselines(const core::Snapshot& snap) {
  std::vector<GpuBaseline> out;
  for (const auto& g : snap.drivers.gpus) {
    auto summary = snap.memory_summary(g);
    out.push_back({g.index, g.memory.used_bytes, summary.unattributed_bytes});
  }
  return out;
}

// A listed target whose workers share its open GPU files keeps its memory through them: say so
// before anything is signalled, with how to include them, and wait for nothing.
void note_sharers_left(const core::Snapshot& snap, const Kin& kin, Plan& plan, Target& t) {
  if (t.gpus.empty() || t.action != Action::Signal) return;
  bool in_tree = true, in_group = true;
  for (const auto& row : snap.rows) {
    if (!row.process || row.process->stat.is_zombie() || plan.find(row.pid)) continue;
    const auto& shares = row.shares_context_of;
    if (std::find(shares.begin(), shares.end(), t.pid) == shares.end()) continue;
    t.sharers_left.push_back(row.pid);
    in_tree = in_tree && kin.descends_from(*row.process, t.pid);
    in_group = in_group && row.process->stat.pgid == t.pgid;
  }
  if (t.sharers_left.empty()) return;
  std::string pids;
  for (pid_t w : t.sharers_left) pids += (pids.empty() ? "" : " ") + std::to_string(w);
  const std::string how =
      in_tree    ? "add --tree (its descendants)"
      : in_group ? "add --group (its process group)"
                 : "name them too: `gpureap kill " + std::to_string(t.pid) + " " + pids + "`";
  plan.notes.push_back("PID " + std::to_string(t.pid) + "'s GPU memory stays held while " +
                       (t.sharers_left.size() == 1 ? "PID " : "PIDs ") + pids +
                       " share its GPU files (its workers); to free it, " + how);
}

// The request in words without the typed numbers that are threads: each is told on its own, and
// a selection of "PID 1234" would call a thread a process. Empty when nothing else was asked.
std::string selection_words(const Request& request, const std::vector<NamedThread>& threads) {
  Request asked = request;
  std::erase_if(asked.pids, [&](pid_t pid) {
    return std::any_of(threads.begin(), threads.end(),
                       [&](const NamedThread& t) { return t.tid == pid; });
  });
  // Without its PIDs a request may have no selector left, and --gpu or --user alone would read
  // as choosing every holder: what was asked was threads only.
  if (request.has_selector() && !asked.has_selector()) return {};
  return describe(asked);
}

}  // namespace

core::Result<Plan> make_plan(const core::Snapshot& snap, const Request& request,
                             const Caller& caller, const DetailsSource& details,
                             const std::vector<NamedThread>& threads) {
  std::optional<uid_t> only_uid;
  if (request.user) {
    auto uid = procfs::resolve_user(*request.user);
    if (!uid) return uid.error();
    only_uid = *uid;
  }
  auto selection = select_targets(snap, request, caller, threads);
  if (!selection) return selection.error();

  Plan plan;
  plan.threads = std::move(selection->threads);
  plan.selection = selection_words(request, plan.threads);
  plan.backend_available = snap.drivers.any_available();
  plan.notes = std::move(selection->notes);
  plan.gpus = baselines(snap);
  size_t other_users = 0;
  for (auto& [pid, reasons] : selection->reasons) {
    const core::HostProcess* p = snap.find(pid);
    if (!p) continue;
    Target t = make_target(snap, *p, std::move(reasons), details);
    if (only_uid && t.uid != only_uid) {
      ++other_users;
      continue;
    }
    judge(t, *p, caller);
    plan.targets.push_back(std::move(t));
  }
  if (other_users > 0)
    plan.notes.push_back(std::to_string(other_users) +
                         " matching process(es) left out: not owned by " + *request.user);
  const Kin kin(snap);
  for (auto& t : plan.targets) note_sharers_left(snap, kin, plan, t);
  // A gone PID is reclaimed through the keepers that remain in the plan.
  for (auto& g : selection->gone) {
    std::erase_if(g.keepers, [&](pid_t k) { return !plan.find(k); });
    // --user narrows the gone PIDs too: one none of whose keepers is the user's is not theirs.
    if (only_uid && g.keepers.empty()) continue;
    plan.gone.push_back(std::move(g));
  }
  return plan;
}

}  // namespace gpureap::reap
