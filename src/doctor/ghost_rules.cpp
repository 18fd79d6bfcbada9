// Memory the driver lists for processes that are gone, and memory it attributes to nobody:
// kept alive by holders, still being torn down, or leaked.
#include <fmt/format.h>

#include <algorithm>

#include "doctor/diagnose.h"
#include "doctor/evidence.h"
#include "output/time_format.h"

namespace gpureap::doctor {
namespace {

// Unattributed memory below this is driver bookkeeping, not a leak worth a reset.
constexpr uint64_t kUnattributedFloor = 256ull << 20;
// A drop smaller than this between samples is noise.
constexpr uint64_t kDropNoise = 16ull << 20;

uint64_t listed_bytes(const core::ProcessRow& r) {
  uint64_t sum = 0;
  for (const auto& u : r.gpus) sum += u.used_bytes.value_or(0);
  return sum;
}

std::vector<unsigned> row_gpus(const core::ProcessRow& r) {
  std::vector<unsigned> out;
  for (const auto& u : r.gpus) out.push_back(u.index);
  return out;
}

// Live processes the driver does not list that hold the device file of one of `gpus`; those
// in the gone PID's process group first, since they are its own workers.
std::vector<const core::HostProcess*> keepers(const core::Snapshot& s, pid_t gone,
                                              const std::vector<unsigned>& gpus) {
  std::vector<const core::HostProcess*> related, other;
  for (const auto& p : s.proc.processes) {
    if (p.stat.is_zombie() || !p.holds_device()) continue;
    if (const auto* r = s.row(p.stat.pid); r && r->listed_by_driver) continue;
    bool holds = std::any_of(gpus.begin(), gpus.end(), [&](unsigned g) {
      const auto* gpu = s.gpu(g);
      return p.holds_nvidia_gpu(gpu ? gpu->minor : std::nullopt);
    });
    if (holds) (p.stat.pgid == gone ? related : other).push_back(&p);
  }
  return related.empty() ? other : related;
}

bool wanted(const DoctorInput& in, const std::vector<unsigned>& gpus) {
  return !in.gpu || std::find(gpus.begin(), gpus.end(), *in.gpu) != gpus.end();
}

void foreign(const DoctorInput& in, std::vector<Finding>& out) {
  Finding f{"foreign-namespace", Severity::Warning};
  for (const auto& r : in.last.rows) {
    if (!r.has(core::Anomaly::ForeignNamespace) || !wanted(in, row_gpus(r))) continue;
    f.pids.push_back(r.pid);
    f.memory_bytes += listed_bytes(r);
    for (unsigned g : row_gpus(r)) f.gpus.push_back(g);
    f.evidence.push_back(fmt::format("PID {} is listed on GPU {} with {} but is not visible here", r.pid,
                                     fmt::join(row_gpus(r), ","), bytes_text(listed_bytes(r))));
  }
  if (f.pids.empty()) return;
  f.evidence.push_back("gpureap runs in a child PID namespace (a container); the driver reports host PIDs");
  f.explanation =
      "These PIDs belong to the host (or to other containers) and cannot be inspected or "
      "signalled from this namespace. Run gpureap in the host's PID namespace to explain them.";
  f.remedy = {"sudo gpureap doctor   # on the host",
              "docker run --pid=host --privileged ... gpureap doctor",
              "Kubernetes: run gpureap in a pod with hostPID: true"};
  out.push_back(std::move(f));
}

void gone_pid(const DoctorInput& in, const core::ProcessRow& r, std::vector<Finding>& out) {
  const auto& s = in.last;
  auto gpus = row_gpus(r);
  uint64_t bytes = listed_bytes(r);
  std::string listed = fmt::format("PID {} is listed on GPU {} with {} but is not in /proc", r.pid,
                                   fmt::join(gpus, ","), bytes_text(bytes));
  auto keep = keepers(s, r.pid, gpus);
  if (!keep.empty()) {
    Finding f{"no-such-process", Severity::Critical, gpus, {r.pid}, bytes, {listed}};
    std::vector<pid_t> kp;
    for (const auto* p : keep) {
      f.pids.push_back(p->stat.pid);
      kp.push_back(p->stat.pid);
      f.evidence.push_back(holds_sentence(s, *p));
    }
    f.explanation = fmt::format(
        "The process that created this GPU context is gone, but {} still hold{} its device files "
        "(inherited when it forked), so the driver cannot free the memory.",
        keep.size() == 1 ? "one process" : std::to_string(keep.size()) + " processes",
        keep.size() == 1 ? "s" : "");
    f.remedy = {fmt::format("gpureap kill {}   # ends the holders, waits for the memory", r.pid),
                "gpureap kill " + pid_list(kp)};
    for (const auto* p : keep)
      if (auto stop = container_stop_command(*p)) f.remedy.push_back(*stop);
    out.push_back(std::move(f));
    return;
  }
  const auto* before = in.first.row(r.pid);
  if (before && listed_bytes(*before) > bytes + kDropNoise) {
    out.push_back({"releasing", Severity::Info, gpus, {r.pid}, bytes,
                   {listed, fmt::format("its memory dropped from {} to {} between samples",
                                        bytes_text(listed_bytes(*before)), bytes_text(bytes))},
                   "The driver is still tearing the context down; this takes seconds to a minute.",
                   {"gpureap doctor --settle 30s   # check again"}});
    return;
  }
  if (!r.has(core::Anomaly::Leaked)) {
    out.push_back({"no-such-process", Severity::Warning, gpus, {r.pid}, bytes,
                   {listed, "no holder of that GPU's device files was found, but the view is incomplete"},
                   "Some processes could not be inspected, so the holder keeping this memory may be hidden.",
                   {"sudo gpureap doctor"}});
    return;
  }
  auto window = std::chrono::duration_cast<std::chrono::milliseconds>(in.last.timestamp - in.first.timestamp);
  Finding f{"leaked-memory", Severity::Critical, gpus, {r.pid}, bytes, {listed}};
  f.evidence.push_back("every live holder of that GPU's device files is itself listed by the driver");
  f.evidence.push_back(fmt::format("the memory stayed for the {:.1f} s between samples",
                                   window.count() / 1000.0));
  f.explanation =
      "No live process can be keeping this context: the driver leaked it. Only a GPU reset (or "
      "a reboot) frees it. If the process died within the last minute, re-run with a longer "
      "--settle first.";
  for (unsigned g : gpus) f.remedy.push_back(fmt::format("gpureap reset --gpu {}", g));
  f.remedy.push_back("reboot   # if the reset is refused");
  out.push_back(std::move(f));
}

// Memory of PIDs that were gone at the first sample and left the lists by the last one.
void released_during_settle(const DoctorInput& in, std::vector<Finding>& out) {
  for (const auto& r : in.first.rows) {
    if (r.process || in.last.row(r.pid) || !wanted(in, row_gpus(r))) continue;
    out.push_back({"releasing", Severity::Info, row_gpus(r), {r.pid}, listed_bytes(r),
                   {fmt::format("PID {} (gone) was listed with {} at the first sample and left the "
                                "driver's lists before the last",
                                r.pid, bytes_text(listed_bytes(r)))},
                   "The driver was tearing the context down; the memory is coming back.",
                   {"gpureap ps   # check that the memory is back"}});
  }
}

void unattributed(const DoctorInput& in, std::vector<Finding>& out) {
  const auto& s = in.last;
  if (s.proc.in_child_pid_namespace) return;  // foreign processes explain it
  for (const auto& g : s.backend.gpus) {
    if (g.error || (in.gpu && *in.gpu != g.index)) continue;
    auto now = s.memory_summary(g).unattributed_bytes.value_or(0);
    if (now < kUnattributedFloor) continue;
    const auto* g0 = in.first.gpu(g.index);
    auto then = g0 ? in.first.memory_summary(*g0).unattributed_bytes.value_or(0) : now;
    std::string seen = fmt::format("GPU {} uses {} that the driver attributes to no process",
                                   g.index, bytes_text(now));
    if (then > now + kDropNoise) {
      out.push_back({"releasing", Severity::Info, {g.index}, {}, now,
                     {seen, fmt::format("it dropped from {} between samples", bytes_text(then))},
                     "The driver is still freeing memory of processes that ended.",
                     {"gpureap doctor --settle 30s   # check again"}});
      continue;
    }
    if (!keepers(s, 0, {g.index}).empty() || !s.complete()) continue;
    out.push_back({"leaked-memory", Severity::Critical, {g.index}, {}, now,
                   {seen, "no process that the driver does not list holds this GPU's device files"},
                   "The memory belongs to no live process: a leaked context or a driver fault. Only a "
                   "GPU reset (or a reboot) frees it.",
                   {fmt::format("gpureap reset --gpu {}", g.index), "reboot   # if the reset is refused"}});
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
