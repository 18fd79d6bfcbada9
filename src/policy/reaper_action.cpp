#include "policy/reaper_action.h"

#include <signal.h>

#include <algorithm>

#include "reap/arguments.h"
#include "reap/collector_world.h"
#include "reap/kin.h"
#include "reap/outcome.h"
#include "reap/pipeline.h"

namespace gpureap::policy {
namespace {

using std::chrono::milliseconds;

ActionResult unacted(const reap::Target& t) {
  switch (t.action) {
    case reap::Action::NotPermitted:
      return {"not-permitted", std::nullopt, t.refusal, false};
    case reap::Action::Zombie:
      return {"gone", std::nullopt, t.refusal, false};
    case reap::Action::Signal:
    case reap::Action::Refused:
      return {"refused", std::nullopt, t.refusal, false};
  }
  return {"refused", std::nullopt, t.refusal, false};  // no action
}

// What became of a live identity.
ActionResult live_result(const reap::Report& report, pid_t pid) {
  auto o = std::find_if(report.outcomes.begin(), report.outcomes.end(),
                        [&](const reap::Outcome& x) { return x.pid == pid; });
  if (o == report.outcomes.end())
    return {"failed", std::nullopt, "the reaper reported nothing for it", true};
  const auto freed = reap::freed_bytes(report);
  switch (o->kind) {
    case reap::OutcomeKind::Released:
      return {"released", freed, o->why, false};
    case reap::OutcomeKind::StillHeld:
      return {"still-held", freed,
              o->held_by.empty()
                  ? "it exited but the driver still holds its memory"
                  : "it exited but " + reap::holders_text(o->held_by) + " still hold its memory",
              false};
    case reap::OutcomeKind::Survived:
      return {"survived", std::nullopt, o->why, true};
    case reap::OutcomeKind::NotPermitted:
      return {"not-permitted", std::nullopt, o->why, false};
    case reap::OutcomeKind::Refused:
      return {"refused", std::nullopt, o->why, false};
  }
  return {"failed", std::nullopt, "unknown outcome", false};
}

// The processes the action sent at least one signal to, as the plan pinned them, for the
// record's `signalled`: a target whose execution sent none (it exited first, its PID was
// recycled) is not among them.
std::vector<audit::Signalled> signalled_list(const reap::Reaped& reaped) {
  std::vector<audit::Signalled> out;
  for (size_t i = 0; i < reaped.executions.size() && i < reaped.plan.targets.size(); ++i) {
    const reap::Execution& e = reaped.executions[i];
    if (e.signals.empty()) continue;
    const reap::Target& t = reaped.plan.targets[i];
    audit::Signalled s{t.pid, t.start_ticks, t.comm, t.uid, t.user, {}};
    for (int signal : e.signals) s.signals.push_back(reap::signal_name(signal));
    out.push_back(std::move(s));
  }
  return out;
}

// What became of a gone PID whose keepers were ended. The detail names whom the action
// signalled: the record's process is the gone PID, and the reader must see whom it reached.
ActionResult gone_result(const reap::Reaped& reaped, pid_t pid) {
  const reap::Report& report = reaped.report;
  for (const auto& o : report.outcomes)
    if (o.kind == reap::OutcomeKind::Survived)
      return {"survived", std::nullopt, "keeper " + std::to_string(o.pid) + ": " + o.why, true};
  auto g = std::find_if(report.gone.begin(), report.gone.end(),
                        [&](const reap::GoneOutcome& x) { return x.pid == pid; });
  if (g == report.gone.end() || !g->attempted)
    return {"refused", std::nullopt, "no live process keeps its memory that could be ended", false};
  std::string signalled;
  for (const auto& s : signalled_list(reaped))
    signalled += (signalled.empty() ? "" : ", ") + audit::describe(s);
  const std::string ended = signalled.empty() ? "its keepers exited before any signal"
                                              : "its keepers were ended: " + signalled;
  if (g->released) return {"released", reap::freed_bytes(report), ended, false};
  return {"still-held", reap::freed_bytes(report),
          ended + (g->held_by.empty() ? "; the driver still holds the memory"
                                      : "; still held by " + reap::holders_text(g->held_by)),
          false};
}

// A live process that keeps gone PIDs' contexts alive (a dead trainer's worker): their
// listings are what ending it frees, so the verifier waits for them too. They count only when
// every keeper has exited; a sibling that keeps them as well is not ended by this action.
void add_kept_listings(reap::Plan& plan, const core::Snapshot& s, pid_t pid) {
  auto target = std::find_if(plan.targets.begin(), plan.targets.end(),
                             [&](const reap::Target& t) { return t.pid == pid; });
  if (target == plan.targets.end()) return;
  reap::Kin kin(s);
  for (const auto& row : s.rows) {
    if (row.process || !row.listed_by_driver) continue;
    auto keepers = kin.keepers(row.pid);
    if (std::find(keepers.begin(), keepers.end(), pid) == keepers.end()) continue;
    if (std::find(target->keeps.begin(), target->keeps.end(), row.pid) == target->keeps.end())
      target->keeps.push_back(row.pid);
    if (std::none_of(plan.gone.begin(), plan.gone.end(),
                     [&](const reap::GoneListing& g) { return g.pid == row.pid; }))
      plan.gone.push_back({row.pid, row.driver_name, row.gpus, keepers, false,
                           row.has(core::Anomaly::ForeignNamespace)});
  }
}

// A named PID overrides the protected list on the command line; a policy never does.
void refuse_protected(reap::Plan& plan) {
  for (auto& t : plan.targets)
    if ((t.action == reap::Action::Signal || t.action == reap::Action::Refused) &&
        t.protected_process) {
      t.action = reap::Action::Refused;
      t.refusal = "protected (display server or GPU management daemon): policies never end it";
    }
}

// SIGTERM escalating to SIGKILL after the policy's grace, or SIGKILL at once.
reap::ReapOptions reap_options(const Policy& policy, milliseconds wait_release,
                               const std::function<bool()>& cancelled) {
  reap::ReapOptions o;
  o.exec.signal = policy.action == Action::Kill ? SIGKILL : SIGTERM;
  o.exec.grace = policy.grace;
  o.exec.kill_wait = reap::kill_wait_for(policy.grace);
  o.exec.cancelled = cancelled;
  o.verify.wait_release = wait_release;
  o.verify.cancelled = cancelled;
  return o;
}

}  // namespace

ReaperAction::ReaperAction(collect::Collector collector, milliseconds wait_release)
    : world_(std::make_shared<reap::CollectorWorld>(
          std::make_shared<const collect::Collector>(std::move(collector)))),
      wait_release_(wait_release) {}

ActionResult ReaperAction::run(const ActionRequest& r,
                               const std::function<bool()>& cancelled) const {
  if (!world_->signals_reach())
    return {"refused", std::nullopt,
            "the procfs at " + world_->proc_root() +
                " is not gpureap's own PID namespace, so its PIDs "
                "cannot be signalled from here",
            false};
  reap::Request request;
  // Chosen by the policy, not typed by a user: the reaper's rules for unnamed targets hold
  // (protected processes, and a gone PID's keepers that the driver lists are left alone).
  request.chosen = {{r.identity.pid, reap::ReasonKind::Policy, std::nullopt}};
  std::optional<ActionResult> unexecuted;
  auto go_ahead = [&](reap::Plan& plan) {
    if (r.identity.start_ticks) {
      const reap::Target* t = plan.find(r.identity.pid);
      if (!t || t->start_ticks != *r.identity.start_ticks) {
        unexecuted = ActionResult{"gone", std::nullopt,
                                  "the process exited before it could be ended", false};
        return false;
      }
      add_kept_listings(plan, *r.snapshot, r.identity.pid);
    }
    refuse_protected(plan);
    if (plan.count(reap::Action::Signal) > 0) return true;
    const reap::Target* t = plan.find(r.identity.pid);
    unexecuted = t ? unacted(*t) : gone_result(reap::Reaped{}, r.identity.pid);
    return false;
  };
  reap::Pipeline pipeline(*world_, reap_options(r.policy, wait_release_, cancelled));
  auto reaped = pipeline.run(*r.snapshot, request, go_ahead, std::chrono::system_clock::now());
  if (!reaped) return {"failed", std::nullopt, reaped.error().text(), true};
  if (unexecuted) return *unexecuted;
  for (const auto& e : reaped->executions)
    if (e.pid == r.identity.pid && e.status == reap::ExecStatus::Recycled)
      return {"gone", std::nullopt, e.why, false};
  ActionResult result = r.identity.start_ticks ? live_result(reaped->report, r.identity.pid)
                                               : gone_result(*reaped, r.identity.pid);
  result.signalled = signalled_list(*reaped);
  return result;
}

}  // namespace gpureap::policy
