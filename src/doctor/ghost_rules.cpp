// Memory the driver lists for processes that are gone, and memory it attributes to nobody:
// kept alive by holders, still being torn down, or leaked.
#include <fmt/format.h>

#include <algorithm>

#include "core/gpu_place.h"
#include "core/listed_identity.h"
#include "doctor/diagnose.h"
#include "doctor/evidence.h"
#include "doctor/reset_guard.h"
#include "doctor/reset_remedy.h"
#include "doctor/server_rules.h"
#include "text/time_format.h"

namespace gpureap::doctor {
namespace {

// A drop smaller than this between samples is noise.
constexpr uint64_t kDropNoise = 16ull << 20;

std::vector<unsigned> row_gpus(const core::ProcessRow& r) {
  std::vector<unsigned> out;
  for (const auto& u : r.gpus) out.push_back(u.index);
  return out;
}

// Where the driver lists a row: "0", or "0/3" on split GPU 0's GPU instance 3 (core/gpu_place.h).
std::vector<std::string> row_places(const core::ProcessRow& r) {
  std::vector<std::string> out;
  for (const auto& u : r.gpus) out.push_back(core::gpu_place_text(u.index, u.gpu_instance_id));
  return out;
}

// On a split GPU: which instance the gone PID ran in, and which instance each keeper is granted
// through the capability files it holds.
void instance_evidence(const core::Snapshot& s, const core::ProcessRow& r,
                       const std::vector<const core::HostProcess*>& keep,
                       std::vector<std::string>& evidence) {
  for (const auto& u : r.gpus) {
    const core::Gpu* gpu = s.gpu(u.index);
    if (!gpu || !u.gpu_instance_id) continue;
    const std::string place = core::instance_place(u.index, *u.gpu_instance_id);
    if (const auto* instance = core::find_instance(*gpu, *u.gpu_instance_id))
      evidence.push_back(
          fmt::format("GPU {} is {} of GPU {}: only the work in that instance is affected", place,
                      core::instance_label(*instance), u.index));
    for (const auto* p : keep) {
      auto held = core::held_instances(*p, *gpu);
      if (held.empty()) continue;
      std::vector<std::string> places;
      for (unsigned gi : held) places.push_back(core::instance_place(u.index, gi));
      evidence.push_back(fmt::format("PID {} holds the files that grant instance {}", p->stat.pid,
                                     fmt::join(places, ", ")));
    }
  }
}

std::vector<const core::HostProcess*> live(const core::Snapshot& s,
                                           const std::vector<pid_t>& pids) {
  std::vector<const core::HostProcess*> out;
  for (pid_t pid : pids)
    if (const auto* p = s.find(pid)) out.push_back(p);
  return out;
}

// Where the listed process went: gone from /proc, or its number is another process's now.
std::string listed_sentence(const core::Snapshot& s, const core::ProcessRow& r, uint64_t bytes) {
  std::string head = fmt::format("PID {} is listed on GPU {} with {}", r.pid,
                                 fmt::join(row_places(r), ","), bytes_text(bytes));
  if (!r.reused) return head + " but is not in /proc";
  core::ProcessStat st;
  st.start_ticks = r.reused->start_ticks;
  auto start = s.start_time(st);
  return fmt::format(
      "{}, but PID {} was reused: the process that has the number now ({}{}{}) {}", head, r.pid,
      r.reused->comm, r.reused->uid ? fmt::format(", uid {}", *r.reused->uid) : std::string(),
      start ? ", started " + text::iso8601_utc(*start) : std::string(), core::describe(*r.reused));
}

// Holders of the ghost's GPUs' files with no evidence that they keep it: shown, never planned.
void other_holder_evidence(const core::Snapshot& s, const core::Ghost& ghost,
                           std::vector<std::string>& evidence) {
  for (const auto* p : live(s, ghost.other_holders))
    evidence.push_back(fmt::format(
        "{} also holds GPU {}'s files; not known to keep PID {}'s memory (it shares no open file "
        "with its job)",
        process_label(*p), fmt::join(ghost.gpus, ","), ghost.pid));
}

// A reset step for GPU `gpu`; on a split GPU it says first that the reset ends every instance's
// work (doctor/reset_guard.h), in one line.
RemedyStep with_split_reset_note(const core::Snapshot& s, unsigned gpu, RemedyStep reset) {
  if (auto note = split_reset_note(s, gpu))
    reset.why = *note + (reset.why.empty() ? "" : "; " + reset.why);
  return reset;
}

bool wanted(const DoctorInput& in, const std::vector<unsigned>& gpus) {
  return !in.gpu || std::find(gpus.begin(), gpus.end(), *in.gpu) != gpus.end();
}

void foreign(const DoctorInput& in, std::vector<Finding>& out) {
  Finding f{FindingCode::ForeignNamespace, Severity::Warning};
  for (const auto& r : in.last.rows) {
    if (!r.has(core::Anomaly::ForeignNamespace) || !wanted(in, row_gpus(r))) continue;
    f.pids.push_back(r.pid);
    f.memory_bytes += r.listed_bytes();
    for (unsigned g : row_gpus(r)) f.gpus.push_back(g);
    f.evidence.push_back(fmt::format("PID {} is listed on GPU {} with {} but is not visible here",
                                     r.pid, fmt::join(row_gpus(r), ","),
                                     bytes_text(r.listed_bytes())));
  }
  if (f.pids.empty()) return;
  f.evidence.push_back(
      "gpureap runs in a child PID namespace (a container); the driver reports host PIDs");
  f.explanation =
      "These PIDs belong to the host (or to other containers) and cannot be inspected or "
      "signalled from this namespace. Run gpureap in the host's PID namespace to explain them.";
  f.remedy = {{StepKind::Run, "sudo gpureap doctor", "on the host"},
              {StepKind::Or, "docker run --pid=host --privileged ... gpureap doctor",
               "in a container that shares the host's PIDs"},
              {StepKind::Or, "run gpureap in a pod with hostPID: true", "on Kubernetes"}};
  f.summary = fmt::format("{} listed by the driver with {} are not visible in this PID namespace",
                          f.pids.size() == 1 ? "1 PID" : std::to_string(f.pids.size()) + " PIDs",
                          bytes_text(f.memory_bytes));
  out.push_back(std::move(f));
}

// A gone PID whose context live processes keep: `keep` hold its device files, `listed_keep` are
// listed with contexts of their own and may hold inherited files too.
Finding kept_ghost(const core::Snapshot& s, const core::ProcessRow& r, const core::Ghost& ghost,
                   const std::vector<const core::HostProcess*>& keep,
                   const std::vector<const core::HostProcess*>& listed_keep, std::string listed) {
  auto gpus = row_gpus(r);
  uint64_t bytes = r.listed_bytes();
  Finding f{FindingCode::NoSuchProcess, Severity::Critical, gpus, {r.pid}, bytes,
            {std::move(listed)}};
  std::vector<pid_t> kp;
  for (const auto* p : keep) {
    f.pids.push_back(p->stat.pid);
    kp.push_back(p->stat.pid);
    f.evidence.push_back(holds_sentence(s, *p));
  }
  for (const auto* p : listed_keep) {
    f.pids.push_back(p->stat.pid);
    f.evidence.push_back(
        fmt::format("{} is listed by the driver with a context of its own, and descends from PID "
                    "{} or shares "
                    "its process group: it may also hold files it inherited from it",
                    process_label(*p), r.pid));
  }
  instance_evidence(s, r, keep, f.evidence);
  f.evidence.push_back(
      ghost.exact ? "the keepers' open device files are shared with no live process the driver "
                    "lists (compared with kcmp)"
                  : "who keeps it is inferred from the process tree and groups: the open files "
                    "could not be compared (" +
                        s.proc.open_files_unknown.value_or("no kcmp") + ")");
  other_holder_evidence(s, ghost, f.evidence);
  size_t n = keep.size() + listed_keep.size();
  f.explanation = fmt::format(
      "The process that created this GPU context is gone, but {} still hold{} its device files "
      "(inherited when it forked), so the driver cannot free the memory.",
      n == 1 ? "one process" : std::to_string(n) + " processes", n == 1 ? "s" : "");
  if (!listed_keep.empty())
    f.explanation +=
        " A keeper the driver lists runs a job of its own: ending it ends that job too.";
  std::vector<pid_t> all = kp;
  for (const auto* p : listed_keep) all.push_back(p->stat.pid);
  f.remedy = {{StepKind::Run, fmt::format("gpureap kill {}", r.pid),
               fmt::format("ends {} ({} {}) and waits for the memory to come back",
                           all.size() == 1 ? "its keeper" : "its keepers",
                           all.size() == 1 ? "PID" : "PIDs", pid_list(all))}};
  for (const auto* p : keep)
    if (auto stop = container_stop_command(*p)) {
      RemedyStep step(*stop);
      step.kind = StepKind::Or;
      f.remedy.push_back(std::move(step));
    }
  f.summary =
      fmt::format("GPU {}: {} held by gone PID {} through {}", fmt::join(row_places(r), ","),
                  bytes_text(bytes), r.pid, n == 1 ? "1 worker" : std::to_string(n) + " workers");
  return f;
}

void gone_pid(const DoctorInput& in, const core::ProcessRow& r, std::vector<Finding>& out) {
  const auto& s = in.last;
  auto gpus = row_gpus(r);
  uint64_t bytes = r.listed_bytes();
  std::string listed = listed_sentence(s, r, bytes);
  const core::Ghost* ghost = s.ghost(r.pid);
  auto keep = ghost ? live(s, ghost->keepers) : std::vector<const core::HostProcess*>{};
  auto listed_keep =
      ghost ? live(s, ghost->listed_keepers) : std::vector<const core::HostProcess*>{};
  if (!keep.empty() || !listed_keep.empty()) {
    out.push_back(kept_ghost(s, r, *ghost, keep, listed_keep, listed));
    return;
  }
  const auto* before = in.first.row(r.pid);
  if (before && before->listed_bytes() > bytes + kDropNoise) {
    out.push_back({FindingCode::Releasing,
                   Severity::Info,
                   gpus,
                   {r.pid},
                   bytes,
                   {listed, fmt::format("its memory dropped from {} to {} between samples",
                                        bytes_text(before->listed_bytes()), bytes_text(bytes))},
                   "The driver is still tearing the context down; this takes seconds to a minute.",
                   {"gpureap doctor --settle 30s   # check again"},
                   fmt::format("GPU {}: {} of gone PID {} is being released",
                               fmt::join(row_places(r), ","), bytes_text(bytes), r.pid)});
    return;
  }
  if (ghost && ghost->kept_by_server()) {
    out.push_back(served_ghost(in, r, *ghost));
    return;
  }
  if (!r.has(core::Anomaly::Leaked)) {
    out.push_back(
        {FindingCode::NoSuchProcess,
         Severity::Warning,
         gpus,
         {r.pid},
         bytes,
         {listed, "no holder of that GPU's device files was found, but the view is incomplete"},
         "Some processes could not be inspected, so the holder keeping this memory may be hidden.",
         {"sudo gpureap doctor   # sees every process's open files"},
         fmt::format("GPU {}: {} held by gone PID {}; who keeps it is hidden",
                     fmt::join(row_places(r), ","), bytes_text(bytes), r.pid)});
    return;
  }
  auto window =
      std::chrono::duration_cast<std::chrono::milliseconds>(in.last.timestamp - in.first.timestamp);
  Finding f{FindingCode::LeakedMemory, Severity::Critical, gpus, {r.pid}, bytes, {listed}};
  f.evidence.push_back(
      ghost && !ghost->other_holders.empty()
          ? "no live process is known to keep it: none is of its job (its group, session or "
            "children) or shares an open file with one"
          : "no live process holds an open file of that GPU's device that a live listed "
            "process does not own");
  if (ghost) other_holder_evidence(s, *ghost, f.evidence);
  f.evidence.push_back(
      fmt::format("the memory stayed for the {:.1f} s between samples", window.count() / 1000.0));
  f.explanation =
      ghost && !ghost->other_holders.empty()
          ? "No live process is known to keep this context: the processes that hold the GPU's "
            "files are none of its job. If they are its leftovers after all, ending them frees "
            "it; otherwise only a GPU reset (or a reboot) does."
          : "No live process can be keeping this context: the driver leaked it. Only a GPU reset "
            "(or a reboot) frees it. If the process died within the last minute, re-run with a "
            "longer --settle first.";
  for (unsigned g : gpus)
    f.remedy.push_back(step(f.remedy.empty() ? StepKind::Run : StepKind::Then,
                            reset_command(in.last, g, in.kernel, in.backends)));
  for (size_t i = 0; i < f.remedy.size(); ++i) {
    auto& step = f.remedy[i];
    if (step.why.empty())
      step.why = step.command.rfind("gpureap reset", 0) == 0
                     ? paused_reset_note(in.last, gpus[i])
                           .value_or("frees the GPU's memory; refused while anything uses the GPU")
                     : "frees the GPU's memory";
    step = with_split_reset_note(in.last, gpus[i], step);
  }
  f.remedy.push_back({StepKind::Or, "reboot", "if the reset is refused"});
  f.summary = fmt::format("GPU {}: {} leaked by gone PID {}; only a reset frees it",
                          fmt::join(row_places(r), ","), bytes_text(bytes), r.pid);
  out.push_back(std::move(f));
}

// Memory of PIDs that were gone at the first sample and left the lists by the last one.
void released_during_settle(const DoctorInput& in, std::vector<Finding>& out) {
  for (const auto& r : in.first.rows) {
    if (r.process || in.last.row(r.pid) || !wanted(in, row_gpus(r))) continue;
    out.push_back({FindingCode::Releasing,
                   Severity::Info,
                   row_gpus(r),
                   {r.pid},
                   r.listed_bytes(),
                   {fmt::format("PID {} (gone) was listed with {} at the first sample and left the "
                                "driver's lists before the last",
                                r.pid, bytes_text(r.listed_bytes()))},
                   "The driver was tearing the context down; the memory is coming back.",
                   {"gpureap ps   # check that the memory is back"},
                   fmt::format("GPU {}: {} of gone PID {} was released",
                               fmt::join(row_gpus(r), ","), bytes_text(r.listed_bytes()), r.pid)});
  }
}

// Memory listed on a GPU in the first sample for PIDs that left the driver's lists by the last.
uint64_t departed_bytes(const DoctorInput& in, unsigned gpu) {
  uint64_t sum = 0;
  for (const auto& r : in.first.rows) {
    if (in.last.row(r.pid)) continue;
    for (const auto& u : r.gpus)
      if (u.index == gpu) sum += u.used_bytes.value_or(0);
  }
  return sum;
}

// Memory the driver uses beyond what it lists. Some is normal (driver and firmware
// bookkeeping), so it is reported only above the threshold, and called leaked only with
// evidence: it appeared as listed processes left and stayed through the settle window.
void unattributed(const DoctorInput& in, std::vector<Finding>& out) {
  const auto& s = in.last;
  if (s.proc.in_child_pid_namespace) return;  // foreign processes explain it
  for (const auto& g : s.drivers.gpus) {
    if (g.error || g.processes_error || (in.gpu && *in.gpu != g.index)) continue;
    auto now = s.memory_summary(g).unattributed_bytes.value_or(0);
    uint64_t threshold = in.unattributed.for_total(g.memory.total_bytes);
    if (now <= threshold) continue;
    const auto* g0 = in.first.gpu(g.index);
    auto then = g0 ? in.first.memory_summary(*g0).unattributed_bytes.value_or(0) : now;
    std::string seen =
        fmt::format("GPU {} uses {} that the driver attributes to no process (the threshold is {})",
                    g.index, bytes_text(now), in.unattributed.text());
    if (then > now + kDropNoise) {
      out.push_back({FindingCode::Releasing,
                     Severity::Info,
                     {g.index},
                     {},
                     now,
                     {seen, fmt::format("it dropped from {} between samples", bytes_text(then))},
                     "The driver is still freeing memory of processes that ended.",
                     {"gpureap doctor --settle 30s   # check again"},
                     fmt::format("GPU {}: {} attributed to no process is being released", g.index,
                                 bytes_text(now))});
      continue;
    }
    uint64_t departed = departed_bytes(in, g.index);
    bool appeared = departed > 0 && now > then && now - then + kDropNoise >= departed / 2;
    if (appeared && s.complete()) {
      auto window =
          std::chrono::duration_cast<std::chrono::milliseconds>(s.timestamp - in.first.timestamp);
      out.push_back(
          {FindingCode::LeakedMemory,
           Severity::Critical,
           {g.index},
           {},
           now,
           {seen,
            fmt::format("it grew from {} to {} as processes listed with {} exited, and stayed for "
                        "the {:.1f} s between samples",
                        bytes_text(then), bytes_text(now), bytes_text(departed),
                        window.count() / 1000.0)},
           "The memory of processes that ended did not come back: a leaked context or a driver "
           "fault. Only a GPU reset (or a reboot) frees it. The driver can take up to a minute: "
           "check once more with a longer --settle first.",
           {"gpureap doctor --settle 60s   # first: make sure it stays",
            with_split_reset_note(
                s, g.index,
                step(StepKind::Then, reset_command(in.last, g.index, in.kernel, in.backends))),
            {StepKind::Or, "reboot", "if the reset is refused"}},
           fmt::format("GPU {}: {} leaked by processes that ended; only a reset frees it", g.index,
                       bytes_text(now))});
      continue;
    }
    out.push_back(
        {FindingCode::UnattributedMemory,
         Severity::Warning,
         {g.index},
         {},
         now,
         {seen, "no process the driver lists accounts for it"},
         "The driver, a process in another container or PID namespace it does not name, or a "
         "context that leaked uses it. If it stays while nothing uses the GPU, a reset frees it.",
         {"gpureap doctor --settle 60s   # first: is it still there?",
          with_split_reset_note(
              s, g.index,
              step(StepKind::Then, reset_command(in.last, g.index, in.kernel, in.backends) +
                                       "   # once nothing uses the GPU"))},
         fmt::format("GPU {}: {} attributed to no process", g.index, bytes_text(now))});
  }
}

}  // namespace

void ghost_rules(const DoctorInput& in, std::vector<Finding>& out) {
  foreign(in, out);
  for (const auto& r : in.last.rows)
    if (!r.process && !r.has(core::Anomaly::ForeignNamespace) && wanted(in, row_gpus(r)))
      gone_pid(in, r, out);
  released_during_settle(in, out);
  unattributed(in, out);
}

}  // namespace gpureap::doctor
