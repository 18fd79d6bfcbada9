// Findings about live processes that hold GPU memory or device files.
#include <fmt/format.h>

#include <algorithm>

#include "core/gpu_place.h"
#include "core/orphan.h"
#include "doctor/blocked_remedy.h"
#include "doctor/diagnose.h"
#include "doctor/evidence.h"
#include "doctor/merge.h"
#include "text/escape.h"

namespace gpureap::doctor {
namespace {

void add_container_stop(const core::HostProcess& p, Finding& f) {
  if (auto stop = container_stop_command(p)) f.remedy.push_back(*stop);
}

Finding holder_finding(const core::Snapshot& s, const core::ProcessRow& r, FindingCode code,
                       Severity sev) {
  Finding f{code, sev, core::gpus_of(s, r), {r.pid}, r.listed_bytes()};
  if (r.process->holds_device()) f.evidence.push_back(holds_sentence(s, *r.process));
  if (r.listed_by_driver)
    f.evidence.push_back(fmt::format("the driver lists it with {}", bytes_text(r.listed_bytes())));
  return f;
}

// What a holder's rules share: the snapshot, the row, and the remedy that ends it.
struct Holder {
  const DoctorInput& in;
  const core::ProcessRow& r;
  const core::HostProcess& p;
  bool guarded;  // a protected system service
  // "gpureap kill PID" and what it does, saying so when naming it overrides the protection.
  RemedyStep kill(StepKind kind, const std::string& why) const {
    return {kind, "gpureap kill " + std::to_string(r.pid),
            guarded ? why + " (a protected system service: naming its PID overrides the protection)"
                    : why};
  }
};

// Keeps a gone PID's context alive through inherited fds (warning), or shares the open file of
// a job that runs (info: it will keep the job's memory if it outlives it).
void inherited(const Holder& h, std::vector<Finding>& out) {
  const auto& s = h.in.last;
  const auto& r = h.r;
  if (r.has(core::Anomaly::InheritedHolder)) {
    auto f = holder_finding(s, r, FindingCode::InheritedHolder, Severity::Warning);
    for (pid_t gone : r.keeps) {
      const auto* g = s.row(gone);
      uint64_t bytes = g ? g->listed_bytes() : 0;
      f.memory_bytes += bytes;
      f.evidence.push_back(
          fmt::format("PID {}, listed by the driver with {}, is gone; {}", gone, bytes_text(bytes),
                      h.p.stat.pgid == gone ? "it led this process's group"
                                            : "no live listed process shares this open file"));
    }
    f.explanation =
        "It inherited the GPU device files of a process that is gone, and keeps that "
        "process's GPU memory alive.";
    f.remedy = {h.kill(StepKind::Run, "ends it; the memory it keeps comes back")};
    add_container_stop(h.p, f);
    f.summary = fmt::format("{} is a worker that inherited the GPU files of gone PID {}",
                            process_label(h.p), pid_list(r.keeps));
    out.push_back(std::move(f));
  } else if (!r.listed_by_driver && !r.shares_context_of.empty()) {
    auto f = holder_finding(s, r, FindingCode::InheritedHolder, Severity::Info);
    f.evidence.push_back(
        fmt::format("it shares the open GPU device file of PID {}, which the driver lists: "
                    "the same context",
                    pid_list(r.shares_context_of)));
    f.explanation =
        "A worker or helper of a running job (it inherited the job's GPU device files); it "
        "will keep that job's memory alive if it outlives the job.";
    f.summary = fmt::format("{} is a worker of running PID {}", process_label(h.p),
                            pid_list(r.shares_context_of));
    out.push_back(std::move(f));
  }
}

std::string orphan_sentence(const core::OrphanEvidence& e) {
  using Kind = core::OrphanEvidence::Kind;
  switch (e.kind) {
    case Kind::ParentExited:
      return fmt::format("the process that forked it ({}) has exited (the daemon saw both)",
                         e.gone);
    case Kind::GroupLeaderGone:
      return fmt::format("the leader of its process group ({}) is gone", e.gone);
    case Kind::SessionLeaderGone:
      return fmt::format("the leader of its session ({}) is gone", e.gone);
  }
  return {};
}

// A leftover of a job whose main process ended (a live job's workers are not leftovers).
void orphan(const Holder& h, std::vector<Finding>& out) {
  const auto& s = h.in.last;
  const auto& r = h.r;
  bool workers_only = !r.shares_context_of.empty() && r.keeps.empty();
  if (!r.has(core::Anomaly::Orphan) || !h.p.holds_device() || r.listed_by_driver || workers_only)
    return;
  auto f = holder_finding(s, r, FindingCode::OrphanHolder, Severity::Warning);
  auto why = core::orphan_evidence(s.proc, h.p);
  if (why) f.evidence.push_back(orphan_sentence(*why));
  f.explanation = "A leftover of a job whose main process ended; it holds the GPU open for nobody.";
  f.remedy = {h.kill(StepKind::Run, "ends it"),
              {StepKind::Or, "gpureap kill --ghosts", "ends every such leftover"}};
  f.summary = fmt::format("{} is an orphan{}", process_label(h.p),
                          why ? ": " + orphan_sentence(*why) : std::string());
  add_container_stop(h.p, f);
  out.push_back(std::move(f));
}

void stopped(const Holder& h, std::vector<Finding>& out) {
  const auto& r = h.r;
  if (!r.has(core::Anomaly::Stopped) || !(h.p.holds_device() || r.listed_by_driver)) return;
  auto f = holder_finding(h.in.last, r, FindingCode::StoppedHolder, Severity::Warning);
  f.evidence.push_back(fmt::format("{} is stopped (state {})", process_label(h.p), h.p.stat.state));
  f.explanation =
      "A paused job (Ctrl-Z, SIGSTOP, a scheduler's suspend) keeps its GPU memory until it is "
      "resumed or ended. It is alive: `--ghosts` and `doctor --fix` leave it alone.";
  f.remedy = {"kill -CONT " + std::to_string(r.pid) + "   # resumes it",
              h.kill(StepKind::Or, "ends it, if it was abandoned")};
  f.summary = fmt::format("{} is paused (state {}){}", process_label(h.p), h.p.stat.state,
                          f.memory_bytes ? " and holds " + bytes_text(f.memory_bytes) : "");
  out.push_back(std::move(f));
}

// In D state: no signal acts; the first sample tells whether it has been stuck a while.
void uninterruptible(const Holder& h, std::vector<Finding>& out) {
  const auto& r = h.r;
  if (!r.has(core::Anomaly::Uninterruptible)) return;
  auto f = holder_finding(h.in.last, r, FindingCode::UninterruptibleHolder, Severity::Warning);
  explain_blocked(h.in, h.p, f);
  f.summary =
      fmt::format("{} is stuck in the kernel (state D); no signal acts on it", process_label(h.p));
  out.push_back(std::move(f));
}

void zombie_parent(const Holder& h, std::vector<Finding>& out) {
  const auto& s = h.in.last;
  const auto& r = h.r;
  if (!r.has(core::Anomaly::ZombieChildren)) return;
  auto f = holder_finding(s, r, FindingCode::UnreapedZombies, Severity::Warning);
  std::vector<pid_t> zombies;
  for (const auto& z : s.proc.processes)
    if (z.stat.is_zombie() && z.stat.ppid == r.pid) zombies.push_back(z.stat.pid);
  f.evidence.push_back(fmt::format("{} has zombie children it does not reap: {}",
                                   process_label(h.p), pid_list(zombies)));
  f.explanation =
      "Zombies hold no GPU memory, but their parent is not reaping them: it may be stuck, and "
      "its "
      "exited workers can hide a crash.";
  f.remedy = {"kill -CHLD " + std::to_string(r.pid) + "   # reminds it to reap them",
              h.kill(StepKind::Or, "ends it; its zombies go with it")};
  f.summary = fmt::format("{} does not reap {} zombie child{}", process_label(h.p), zombies.size(),
                          zombies.size() == 1 ? "" : "ren");
  out.push_back(std::move(f));
}

void protected_service(const Holder& h, std::vector<Finding>& out) {
  if (!h.guarded) return;
  auto f = holder_finding(h.in.last, h.r, FindingCode::ProtectedHolder, Severity::Info);
  f.explanation =
      "A system service that holds the GPU on purpose; gpureap never kills it unless named.";
  f.summary = process_label(h.p) + " is a protected system service";
  out.push_back(std::move(f));
}

}  // namespace

void holder_rules(const DoctorInput& in, std::vector<Finding>& out) {
  const auto& s = in.last;
  for (const auto& r : s.rows) {
    if (!r.process) continue;
    auto gpus = core::gpus_of(s, r);
    if (in.gpu && std::find(gpus.begin(), gpus.end(), *in.gpu) == gpus.end()) continue;
    // Naming a PID overrides the protected list: a remedy that names a protected process says so.
    // A keeper of a gone job's context is one whatever it runs now: protection never hides it.
    bool guarded = r.keeps.empty() && in.is_protected && in.is_protected(*r.process);
    Holder h{in, r, *r.process, guarded};
    inherited(h, out);
    orphan(h, out);
    stopped(h, out);
    uninterruptible(h, out);
    zombie_parent(h, out);
    protected_service(h, out);
  }
}

// --gpu N/G: a finding about processes stays when one of them is in the instance.
void keep_gpu_instance(const DoctorInput& in, std::vector<Finding>& out) {
  if (!in.instance) return;
  auto in_instance = [&](pid_t pid) {
    for (const core::Snapshot* s : {&in.last, &in.first})
      if (const auto* r = s->row(pid)) return core::in_place(*s, *r, *in.instance);
    return false;
  };
  std::erase_if(out, [&](const Finding& f) {
    return !f.pids.empty() && std::none_of(f.pids.begin(), f.pids.end(), in_instance);
  });
}

std::vector<Finding> diagnose(const DoctorInput& in) {
  std::vector<Finding> out;
  driver_rules(in, out);
  ghost_rules(in, out);
  holder_rules(in, out);
  ipc_rules(in, out);
  kernel_rules(in, out);
  stalled_job_rules(in, out);
  unproven_rank_end_rules(in, out);
  // Each remedy, fact and explanation is one line in every view (text, JSON, top, alerts): a
  // name in it with a newline or another control character (a process's, a mount point's, a
  // container's) is escaped here, once. Escaping is idempotent, so the views may escape again.
  merge_findings(out);
  keep_gpu_instance(in, out);
  for (auto& f : out) {
    for (auto& r : f.remedy) {
      r.command = text::terminal_safe(r.command);
      r.why = text::terminal_safe(r.why);
    }
    for (auto& e : f.evidence) e = text::terminal_safe(e);
    for (auto& e : f.restricted_evidence) e = text::terminal_safe(e);
    for (auto& x : f.facets) x.text = text::terminal_safe(x.text);
    f.explanation = text::terminal_safe(f.explanation);
    f.summary = text::terminal_safe(f.summary);
  }
  sort_findings(out);
  return out;
}

}  // namespace gpureap::doctor
