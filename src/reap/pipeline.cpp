#include "reap/pipeline.h"

#include <algorithm>

#include "reap/planner.h"
#include "reap/safety.h"

namespace gpureap::reap {

using SystemClock = std::chrono::system_clock;

std::chrono::milliseconds kill_wait_for(std::chrono::milliseconds grace) {
  return std::clamp(grace, std::chrono::milliseconds(1000), std::chrono::milliseconds(5000));
}

core::Result<Plan> Pipeline::plan(const core::Snapshot& snapshot, const Request& request) const {
  // The collector reads details only for GPU holders and listed PIDs; a target found through
  // its tree or group is read now (a D-state one with its wchan).
  auto details = [this](const core::HostProcess& p) {
    return world_.details(p.stat.pid, p.stat.state == 'D');
  };
  return make_plan(snapshot, request, current_caller(world_), details,
                   typed_threads(snapshot, request));
}

// The typed numbers the snapshot has no process for that are threads of one: /proc does not
// list a thread, yet /proc/TID answers, so only the kernel's Tgid tells them from a typo.
std::vector<NamedThread> Pipeline::typed_threads(const core::Snapshot& snapshot,
                                                 const Request& request) const {
  std::vector<NamedThread> out;
  for (pid_t pid : request.pids) {
    if (snapshot.find(pid) || snapshot.row(pid)) continue;
    auto process = world_.thread_group_of(pid);
    if (!process) continue;
    NamedThread t{pid, *process, std::nullopt};
    if (const core::HostProcess* p = snapshot.find(*process))
      t.comm = p->stat.comm;
    else if (auto st = world_.stat(*process); st.ok() && *st)
      t.comm = (*st)->comm;
    out.push_back(std::move(t));
  }
  return out;
}

Reaped Pipeline::carry_out(Plan plan, SystemClock::time_point started) const {
  Reaped out;
  out.plan = std::move(plan);
  out.carried_out = true;
  Timing timing;
  timing.started = started;
  if (progress_.signalling) progress_.signalling(out.plan);
  timing.signalled = SystemClock::now();
  ExecOptions exec = options_.exec;
  if (progress_.escalating) exec.escalating = progress_.escalating;
  out.executions = Executor(world_, exec).run(out.plan);
  if (progress_.awaiting_release) progress_.awaiting_release(out.executions);
  auto verification = verify(out.plan, out.executions, release_source(world_), options_.verify);
  timing.verified = SystemClock::now();
  out.report = compose(out.plan, out.executions, verification);
  timing.last_exit = out.report.timing.last_exit;
  out.report.timing = timing;
  out.report.timing.report = SystemClock::now();
  return out;
}

core::Result<Reaped> Pipeline::run(const core::Snapshot& snapshot, const Request& request,
                                   const GoAhead& go_ahead, SystemClock::time_point started) const {
  auto planned = plan(snapshot, request);
  if (!planned) return planned.error();
  if (go_ahead && !go_ahead(*planned)) return Reaped{std::move(*planned)};
  if (planned->count(Action::Signal) == 0 && planned->count(Action::Zombie) == 0)
    return Reaped{std::move(*planned)};
  return carry_out(std::move(*planned), started);
}

}  // namespace gpureap::reap
