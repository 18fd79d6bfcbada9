// A distributed job one of whose ranks is gone while the others live: they wait for it in
// their next collective until its timeout (often raised to hours), holding their GPUs' memory.
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <set>

#include "core/distributed_job.h"
#include "core/duration.h"
#include "core/gpu_place.h"
#include "core/wait_status.h"
#include "doctor/diagnose.h"
#include "doctor/evidence.h"
#include "doctor/stalled_job.h"
#include "text/escape.h"

namespace gpureap::doctor {
namespace {

// "3", "0–2", "0, 2, 5": rank numbers as people write them.
std::string number_ranges(std::vector<unsigned> n) {
  std::sort(n.begin(), n.end());
  std::string out;
  for (size_t i = 0; i < n.size();) {
    size_t j = i;
    while (j + 1 < n.size() && n[j + 1] == n[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(n[i]);
    if (j > i) out += (j == i + 1 ? ", " : "\u2013") + std::to_string(n[j]);
    i = j + 1;
  }
  return out;
}

// The launcher's command line as a shell would take it, cut where it grows long.
std::string command_line(const core::HostProcess& p) {
  std::string out;
  for (const auto& w : p.details ? p.details->cmdline : std::vector<std::string>{}) {
    if (out.size() > 160) return out + " …";
    out += (out.empty() ? "" : " ") + text::shell_quote(w);
  }
  return out.empty() ? "?" : out;
}

std::string gpu_ranges(const std::vector<unsigned>& gpus) {
  return (gpus.size() == 1 ? "GPU " : "GPUs ") + number_ranges(gpus);
}

// A rank is missing in both samples: one missing only now may be starting.
bool missing_in(const core::ProcView& view, const core::DistributedJob& job, unsigned n) {
  for (const auto& j : core::distributed_jobs(view))
    if (j.launcher == job.launcher && j.launcher_start_ticks == job.launcher_start_ticks)
      return std::find(j.missing.begin(), j.missing.end(), n) != j.missing.end();
  return false;
}

// What one live rank does: its state, where it waits, its memory, the CPU it used between the
// two samples (none: it waits).
std::string rank_sentence(const DoctorInput& in, const core::JobRank& r) {
  const auto& s = in.last;
  const auto* p = s.find(r.pid);
  std::string out = fmt::format("rank {}, {}", r.local_rank ? std::to_string(*r.local_rank) : "?",
                                p ? process_label(*p) : "PID " + std::to_string(r.pid));
  if (!p) return out;
  out += fmt::format(", is in state {}", p->stat.state);
  if (p->details && p->details->wchan && !p->details->wchan->empty())
    out += ", its main thread waiting in " + *p->details->wchan;
  if (const auto* row = s.row(r.pid); row && row->listed_by_driver)
    out += fmt::format(", listed with {} on {}", bytes_text(row->listed_bytes()),
                       gpu_ranges(core::gpus_of(s, *row)));
  // Over a window long enough to tell waiting from computing.
  const auto* before = in.first.find(r.pid);
  const double secs = std::chrono::duration<double>(s.timestamp - in.first.timestamp).count();
  if (before && before->stat.start_ticks == p->stat.start_ticks && secs >= 0.5) {
    const uint64_t used = p->stat.cpu_ticks - std::min(p->stat.cpu_ticks, before->stat.cpu_ticks);
    out += fmt::format(", used {} ms of CPU in {:.1f} s",
                       used * 1000 / static_cast<uint64_t>(std::max(1L, s.proc.ticks_per_second)),
                       secs);
  }
  return out;
}

// The daemon's record of rank `n`'s end, the latest; null where it saw none (a one-shot scan).
const core::RankExit* exit_of(const core::ProcView& view, const core::DistributedJob& job,
                              unsigned n) {
  const core::RankExit* out = nullptr;
  for (const auto& e : view.rank_exits)
    if (e.launcher == job.launcher && e.launcher_start_ticks == job.launcher_start_ticks &&
        e.local_rank == n)
      out = &e;
  return out;
}

// "40 s", "12 min", "3 h 05 min"
std::string age_text(std::chrono::seconds age) {
  const long long s = std::max<long long>(0, age.count());
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min", s / 60);
  return fmt::format("{} h {:02} min", s / 3600, s % 3600 / 60);
}

// How and when a rank ended, as the daemon saw it: "exited with SIGKILL 12 min ago".
struct SeenExit {
  const core::RankExit* exit = nullptr;
  std::optional<std::chrono::seconds> age;
  const core::OomKill* oom = nullptr;  // the OOM killer's record of it

  // "12 min ago", or "no later than 12 min ago" where no exit event dated the end.
  std::string when() const {
    return (exit->end_upper_bound ? "no later than " : "") + age_text(*age) + " ago";
  }
  std::string words() const {
    std::string out = oom ? "was killed by the OOM killer" : "exited";
    if (exit->wait_status && !oom) out += " with " + core::wait_status_text(*exit->wait_status);
    if (age) out += " " + when();
    return out;
  }
};

SeenExit seen_exit(const DoctorInput& in, const core::DistributedJob& job, unsigned n) {
  SeenExit out{exit_of(in.last.proc, job, n)};
  if (!out.exit) return out;
  if (auto t = exit_time(in.last.proc, *out.exit))
    out.age = std::chrono::duration_cast<std::chrono::seconds>(in.last.timestamp - *t);
  out.oom = oom_kill_of(in.kernel, in.last.proc, out.exit->pid, out.exit->start_ticks,
                        out.exit->end_ticks);
  return out;
}

std::string oom_sentence(const core::OomKill& k, const std::string& whom) {
  return fmt::format("the kernel log: the OOM killer killed {}{}: \"{}\"", whom,
                     k.memory_cgroup ? " at its memory cgroup's limit" : "", k.text);
}

// The launcher's children that failed (core::FailedChild) and were zombies in both samples (the
// same processes: their start times): failures it has not reaped for the settle window, so has
// not answered by starting the rank again.
std::vector<core::FailedChild> lasting_failures(const DoctorInput& in,
                                                const core::DistributedJob& job) {
  std::vector<core::FailedChild> out;
  for (const auto& c : job.failed)
    if (const auto* before = in.first.find(c.pid); before && before->stat.is_zombie() &&
                                                   before->stat.start_ticks == c.start_ticks &&
                                                   before->stat.ppid == job.launcher)
      out.push_back(c);
  return out;
}

// How a failed child ended, as its wait status (and the OOM killer's record of it) says: "killed
// by SIGKILL", "exited with status 1", "killed by the OOM killer".
std::string failure_words(const core::FailedChild& c, const core::OomKill* oom) {
  if (oom) return "killed by the OOM killer";
  return (WIFSIGNALED(c.wait_status) ? "killed by " : "exited with ") +
         core::wait_status_text(c.wait_status);
}

Finding stalled(const DoctorInput& in, const core::DistributedJob& job,
                const std::vector<unsigned>& gone) {
  const auto& s = in.last;
  Finding f{FindingCode::StalledJob, Severity::Warning};
  std::set<unsigned> gpus;
  std::vector<unsigned> live;
  f.pids.push_back(job.launcher);
  for (const auto& r : job.ranks) {
    f.pids.push_back(r.pid);
    if (r.local_rank) live.push_back(*r.local_rank);
    if (const auto* row = s.row(r.pid)) {
      f.memory_bytes += row->listed_bytes();
      for (unsigned g : core::gpus_of(s, *row)) gpus.insert(g);
    }
  }
  f.gpus.assign(gpus.begin(), gpus.end());
  // Every process of the job, the launcher first: the remedy ends them all.
  for (pid_t m : job.members)
    if (std::find(f.pids.begin(), f.pids.end(), m) == f.pids.end()) f.pids.push_back(m);
  const auto* l = s.find(job.launcher);
  const std::string job_name =
      fmt::format("job PID {} ({}, user {})", job.launcher, text::terminal_safe(job.kind),
                  core::job_user(s.proc, job));
  const std::string holds =
      f.memory_bytes ? fmt::format(" still hold {}{}", bytes_text(f.memory_bytes),
                                   f.gpus.empty() ? std::string() : " on " + gpu_ranges(f.gpus))
                     : std::string(" still run");
  // The first rank the daemon saw end: the job has waited since.
  std::vector<std::pair<unsigned, SeenExit>> exits;
  for (unsigned n : gone)
    if (auto e = seen_exit(in, job, n); e.exit) exits.emplace_back(n, e);
  std::sort(exits.begin(), exits.end(), [](const auto& a, const auto& b) {
    return a.second.exit->end_ticks < b.second.exit->end_ticks;
  });
  // The failed children no record of the daemon's already tells of: the kernel's word that the
  // job lost a process, though not which rank it was (a zombie keeps no LOCAL_RANK).
  std::vector<std::pair<core::FailedChild, const core::OomKill*>> failures;
  for (const auto& c : lasting_failures(in, job))
    if (std::none_of(exits.begin(), exits.end(),
                     [&](const auto& e) { return e.second.exit->pid == c.pid; }))
      failures.emplace_back(c, oom_kill_of(in.kernel, s.proc, c.pid, c.start_ticks, std::nullopt));
  std::string how = gone.size() == 1 ? "is gone" : "are gone";
  if (!exits.empty()) {
    how = gone.size() == 1
              ? exits[0].second.words()
              : fmt::format("are gone (rank {} {})", exits[0].first, exits[0].second.words());
  } else if (failures.size() == 1) {
    const auto& [c, oom] = failures[0];
    how += fmt::format(" (its launcher's child PID {} {}{})", c.pid,
                       oom || WIFSIGNALED(c.wait_status) ? "was " : "", failure_words(c, oom));
  } else if (!failures.empty()) {
    std::string each;
    for (const auto& [c, oom] : failures)
      each += fmt::format("{}PID {} {}", each.empty() ? "" : ", ", c.pid, failure_words(c, oom));
    how += " (its launcher's children failed: " + each + ")";
  }
  f.summary = fmt::format("rank{} {} of {} {}; rank{} {}{} and {} probably waiting for {}",
                          gone.size() == 1 ? "" : "s", number_ranges(gone), job_name, how,
                          live.size() == 1 ? "" : "s", number_ranges(live), holds,
                          live.size() == 1 ? "is" : "are", gone.size() == 1 ? "it" : "them");
  if (!exits.empty() && exits[0].second.age &&
      *exits[0].second.age >= in.stalled_job_critical_after)
    f.severity = Severity::Critical;
  if (l)
    f.evidence.push_back(
        fmt::format("the launcher, {}, runs {}", process_label(*l), command_line(*l)));
  f.evidence.push_back(fmt::format(
      "its ranks are its children that opened the GPU themselves, run by its user (the kernel's "
      "word); their LOCAL_WORLD_SIZE label says {}, and no live one is labelled LOCAL_RANK {}",
      *job.local_world_size, number_ranges(gone)));
  for (const auto& [n, e] : exits) {
    const auto& status = e.exit->wait_status;
    f.evidence.push_back(
        fmt::format("the daemon saw rank {} (PID {}) end{}{}, {}", n, e.exit->pid,
                    e.age ? " " + e.when() : std::string(),
                    e.exit->end_upper_bound
                        ? " (no exit event of the kernel dated it: /proc showed it ended then, "
                          "and the kernel keeps no record of when)"
                        : "",
                    !status ? "its launcher reaped it before the daemon read how it ended"
                            : (WIFSIGNALED(*status) ? "killed by " : "exiting with ") +
                                  core::wait_status_text(*status)));
    if (e.oom)
      f.evidence.push_back(oom_sentence(*e.oom, fmt::format("rank {} (PID {})", n, e.exit->pid)));
  }
  if (!exits.empty() && exits[0].second.age)
    f.evidence.push_back(
        fmt::format("a stalled job turns critical {} after its first rank's end (the daemon's "
                    "stalled_job_critical_after)",
                    core::format_duration(in.stalled_job_critical_after)));
  for (unsigned n : gone)
    if (const auto* e = job.ended_rank(n); e && e->between_views && !exit_of(s.proc, job, n))
      f.evidence.push_back(fmt::format(
          "doctor saw rank {} (PID {}) end between its two samples, {:.1f} s apart: a live rank "
          "in the first, in the second a zombie its launcher has not reaped",
          n, e->pid, std::chrono::duration<double>(s.timestamp - in.first.timestamp).count()));
  if (!job.exited.empty())
    f.evidence.push_back(
        fmt::format("the launcher has not reaped its exited rank{} {}: it waits for another rank",
                    job.exited.size() == 1 ? "" : "s", pid_list(job.exited)));
  for (const auto& [c, oom] : failures) {
    f.evidence.push_back(fmt::format(
        "the launcher has not reaped its child PID {}, {}, in either sample: the wait status the "
        "kernel keeps for the launcher says that a process of the job (run by its user, in its "
        "process group) failed",
        c.pid, failure_words(c, nullptr)));
    if (oom) f.evidence.push_back(oom_sentence(*oom, fmt::format("PID {}", c.pid)));
  }
  // The numbers named gone for a failure alone: no view saw the rank of that number end.
  std::vector<unsigned> unlabelled;
  for (unsigned n : gone)
    if (!job.ended_rank(n)) unlabelled.push_back(n);
  if (!failures.empty() && !unlabelled.empty())
    f.evidence.push_back(fmt::format(
        "a zombie keeps no environment, so nothing says which rank {} was: rank{} {} {} named "
        "gone because no live rank has {} number, in either sample",
        failures.size() == 1 ? "that child" : "each child", unlabelled.size() == 1 ? "" : "s",
        number_ranges(unlabelled), unlabelled.size() == 1 ? "is" : "are",
        unlabelled.size() == 1 ? "its" : "their"));
  std::vector<unsigned> unproven;
  for (unsigned n : job.missing)
    if (std::find(gone.begin(), gone.end(), n) == gone.end()) unproven.push_back(n);
  if (!unproven.empty())
    f.evidence.push_back(fmt::format(
        "no live rank is labelled LOCAL_RANK {} either, and nothing shows that {} ended: it may "
        "have yet to start, or run under another launcher",
        number_ranges(unproven), unproven.size() == 1 ? "that rank" : "those ranks"));
  if (!job.unreaped.empty())
    f.evidence.push_back(fmt::format(
        "the launcher has not reaped its exited child{} {} either: nothing shows whether {} a "
        "rank (a zombie keeps no environment and no open file)",
        job.unreaped.size() == 1 ? "" : "ren", pid_list(job.unreaped),
        job.unreaped.size() == 1 ? "it was" : "one was"));
  // A one-shot look: the OOM killer's record of an exited rank, when no rank's end was seen (a
  // failed child's is said above).
  if (exits.empty())
    for (pid_t z : job.exited)
      if (const auto* p = s.find(z);
          p && std::none_of(failures.begin(), failures.end(),
                            [&](const auto& x) { return x.first.pid == z; }))
        if (const auto* k = oom_kill_of(in.kernel, s.proc, z, p->stat.start_ticks, std::nullopt))
          f.evidence.push_back(oom_sentence(*k, fmt::format("PID {}", z)));
  for (const auto& r : job.ranks) f.evidence.push_back(rank_sentence(in, r));
  for (unsigned g : f.gpus)
    if (const auto* gpu = s.gpu(g); gpu && gpu->utilization_percent)
      f.evidence.push_back(
          fmt::format("GPU {} shows {} % utilisation", g, *gpu->utilization_percent));
  if (job.run_id) f.evidence.push_back("its run id (a label): " + *job.run_id);
  f.explanation =
      "The ranks of a distributed job meet in every collective: when one rank dies and nothing "
      "ends the others (a hand-written or Slurm-style launcher does not), they wait for it until "
      "the collective's timeout, often hours, holding their GPUs' memory.";
  f.remedy = {{StepKind::Run, "gpureap kill --tree " + std::to_string(job.launcher),
               "ends the whole job: its launcher and every rank"}};
  return f;
}

// The ranks of `job` that are gone, on the kernel's word: one that ended between the samples
// and that its launcher has not reaped (so has not started again); one the daemon saw end whose
// number is missing from both samples (its launcher may be starting it again); and, where a
// child of the launcher failed and it has not reaped it in either sample, every number missing
// from both. A number missing with no such word is no gone rank: it may have yet to start.
std::vector<unsigned> gone_ranks(const DoctorInput& in, const core::DistributedJob& job) {
  std::vector<unsigned> gone;
  if (!job.stalled()) return gone;
  for (const auto& e : job.ended)
    if (e.between_views || missing_in(in.first.proc, job, e.local_rank))
      gone.push_back(e.local_rank);
  if (!lasting_failures(in, job).empty())
    for (unsigned n : job.missing)
      if (std::find(gone.begin(), gone.end(), n) == gone.end() && missing_in(in.first.proc, job, n))
        gone.push_back(n);
  std::sort(gone.begin(), gone.end());
  return gone;
}

// The launcher's zombie children that no view showed as ranks (not another user's), zombies in both
// samples (the same processes: their start times): a child the launcher has not reaped for the
// settle window, not one it is about to.
std::vector<pid_t> lasting_zombies(const DoctorInput& in, const core::DistributedJob& job) {
  std::vector<pid_t> out;
  for (pid_t z : job.unreaped) {
    const auto* now = in.last.find(z);
    const auto* before = in.first.find(z);
    if (now && before && before->stat.is_zombie() &&
        before->stat.start_ticks == now->stat.start_ticks && before->stat.ppid == now->stat.ppid)
      out.push_back(z);
  }
  return out;
}

// A job with rank numbers missing from both samples whose launcher has not reaped children of
// its user: one may be the missing rank, dead, the others waiting for it; or a helper the
// launcher ran, the rank having yet to start or running under another launcher. Nothing the
// kernel keeps of a zombie tells: a doubt about the launcher, which nothing acts on.
Finding unproven_end(const DoctorInput& in, const core::DistributedJob& job,
                     const std::vector<unsigned>& missing, const std::vector<pid_t>& zombies) {
  const auto& s = in.last;
  Finding f{FindingCode::UnreapedZombies, Severity::Warning};
  f.pids.push_back(job.launcher);
  std::set<unsigned> gpus;
  for (const auto& r : job.ranks)
    if (const auto* row = s.row(r.pid))
      for (unsigned g : core::gpus_of(s, *row)) gpus.insert(g);
  f.gpus.assign(gpus.begin(), gpus.end());
  const auto* l = s.find(job.launcher);
  const std::string launcher = l ? process_label(*l) : "PID " + std::to_string(job.launcher);
  const bool one = zombies.size() == 1;
  f.summary = fmt::format(
      "{}, the launcher of a distributed job ({}, user {}), does not reap its exited child{} {} "
      "while rank{} {} of the job {} missing; nothing shows whether {} that rank",
      launcher, text::terminal_safe(job.kind), core::job_user(s.proc, job), one ? "" : "ren",
      pid_list(zombies), missing.size() == 1 ? "" : "s", number_ranges(missing),
      missing.size() == 1 ? "is" : "are", one ? "the child was" : "a child was");
  if (l) f.evidence.push_back(fmt::format("the launcher runs {}", command_line(*l)));
  f.evidence.push_back(fmt::format(
      "its ranks are its children that opened the GPU themselves, run by its user (the kernel's "
      "word); their LOCAL_WORLD_SIZE label says {}, and no live one is labelled LOCAL_RANK {}, "
      "in either sample",
      *job.local_world_size, number_ranges(missing)));
  f.evidence.push_back(fmt::format(
      "its exited child{} {} {} a zombie in both samples: a zombie keeps no "
      "environment and no open file, so nothing the kernel keeps of {} says {} a rank rather than "
      "a program the launcher ran (nvidia-smi, a helper) or a process reparented to it",
      one ? "" : "ren", pid_list(zombies), one ? "is" : "are", one ? "it" : "them",
      one ? "it was" : "one was"));
  for (const auto& r : job.ranks) f.evidence.push_back(rank_sentence(in, r));
  f.evidence.push_back(
      "gpureap calls a job stalled, and ends it on --fix or a policy, only when it saw a rank "
      "end: the daemon watches the ranks of every job, and doctor sees a rank that ends between "
      "its two samples");
  f.explanation =
      "A launcher that waits for one rank does not reap another that died, and the job's other "
      "ranks then wait for the dead one in their next collective, holding their GPUs' memory. "
      "But its unreaped child may as well be a helper it ran, while the missing rank has yet to "
      "start or runs under another launcher (a second container on the node).";
  f.remedy = {{StepKind::Run, "gpureap kill --tree " + std::to_string(job.launcher),
               "if its ranks make no progress (their CPU time above, the job's own log): ends "
               "the whole job"}};
  return f;
}

}  // namespace

void stalled_job_rules(const DoctorInput& in, std::vector<Finding>& out) {
  for (const auto& job : core::distributed_jobs(in.last.proc, &in.first.proc)) {
    // torchrun's agent sees a rank's exit within its monitor interval and restarts every rank
    // (restarts left) or ends them all: the job is its agent's to settle.
    if (job.elastic_agent) continue;
    const auto gone = gone_ranks(in, job);
    if (gone.empty()) continue;
    auto f = stalled(in, job, gone);
    if (in.gpu && std::find(f.gpus.begin(), f.gpus.end(), *in.gpu) == f.gpus.end()) continue;
    out.push_back(std::move(f));
  }
}

void unproven_rank_end_rules(const DoctorInput& in, std::vector<Finding>& out) {
  for (const auto& job : core::distributed_jobs(in.last.proc, &in.first.proc)) {
    if (job.elastic_agent || !job.local_world_size || job.missing.empty() ||
        job.missing.size() >= *job.local_world_size || !gone_ranks(in, job).empty())
      continue;
    std::vector<unsigned> missing;
    for (unsigned n : job.missing)
      if (missing_in(in.first.proc, job, n)) missing.push_back(n);
    const auto zombies = lasting_zombies(in, job);
    if (missing.empty() || zombies.empty()) continue;
    auto f = unproven_end(in, job, missing, zombies);
    if (in.gpu && std::find(f.gpus.begin(), f.gpus.end(), *in.gpu) == f.gpus.end()) continue;
    out.push_back(std::move(f));
  }
}

}  // namespace gpureap::doctor
