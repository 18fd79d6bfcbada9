#include "reap/plan.h"

#include <algorithm>

#include "core/gpu_place.h"

namespace gpureap::reap {
namespace {

std::optional<uint64_t> sum_known(const std::vector<core::GpuUse>& uses) {
  std::optional<uint64_t> total;
  for (const auto& u : uses)
    if (u.used_bytes) total = total.value_or(0) + *u.used_bytes;
  return total;
}

}  // namespace

bool Target::named() const {
  return has(ReasonKind::Named);
}

bool Target::has(ReasonKind kind) const {
  return std::any_of(reasons.begin(), reasons.end(),
                     [&](const Reason& r) { return r.kind == kind; });
}

std::optional<uint64_t> Target::memory_bytes() const {
  return sum_known(gpus);
}

std::optional<uint64_t> GoneListing::memory_bytes() const {
  return sum_known(gpus);
}

const Target* Plan::find(pid_t pid) const {
  auto it = std::lower_bound(targets.begin(), targets.end(), pid,
                             [](const Target& t, pid_t v) { return t.pid < v; });
  return it != targets.end() && it->pid == pid ? &*it : nullptr;
}

size_t Plan::count(Action action) const {
  return static_cast<size_t>(std::count_if(targets.begin(), targets.end(),
                                           [&](const Target& t) { return t.action == action; }));
}

std::string_view to_string(ReasonKind kind) {
  switch (kind) {
    case ReasonKind::Named:
      return "named";
    case ReasonKind::ListedOnGpu:
      return "listed-on-gpu";
    case ReasonKind::HoldsDevice:
      return "holds-device";
    case ReasonKind::InheritedHolder:
      return "inherited-holder";
    case ReasonKind::Descendant:
      return "descendant";
    case ReasonKind::ProcessGroup:
      return "process-group";
    case ReasonKind::Ghost:
      return "ghost";
    case ReasonKind::UserHolder:
      return "user-holder";
    case ReasonKind::Policy:
      return "policy";
    case ReasonKind::StoppedHolder:
      return "stopped-holder";
    case ReasonKind::StalledJob:
      return "stalled-job";
  }
  return "";  // no enumerator: no name
}

std::string_view to_string(Action action) {
  switch (action) {
    case Action::Signal:
      return "signal";
    case Action::Refused:
      return "refused";
    case Action::NotPermitted:
      return "not-permitted";
    case Action::Zombie:
      return "zombie";
  }
  return "";  // no enumerator: no name
}

std::string describe(const Reason& r) {
  auto gpu = [&] { return r.gpu ? core::gpu_place_text(*r.gpu, r.gpu_instance) : "?"; };
  auto pid = [&] { return r.pid ? std::to_string(*r.pid) : std::string("?"); };
  switch (r.kind) {
    case ReasonKind::Named:
      return "named";
    case ReasonKind::ListedOnGpu:
      return "listed on GPU " + gpu();
    case ReasonKind::HoldsDevice:
      return "holds GPU " + gpu() + (r.gpu_instance ? "'s capability files" : "'s device file");
    case ReasonKind::InheritedHolder:
      return "inherited holder of gone PID " + pid();
    case ReasonKind::Descendant:
      return "descendant of " + pid();
    case ReasonKind::ProcessGroup:
      return "in process group " + pid();
    case ReasonKind::Ghost:
      return "ghost: " + std::string(r.anomaly ? core::to_string(*r.anomaly) : "?");
    case ReasonKind::UserHolder:
      return "GPU holder of the user";
    case ReasonKind::Policy:
      return "matched a cleanup policy";
    case ReasonKind::StoppedHolder:
      return "stopped (paused) holder";
    case ReasonKind::StalledJob:
      return "of a distributed job with a rank gone";
  }
  return "";  // no enumerator: no name
}

namespace {
core::GpuPlace place_of(const Request& r) {
  return r.instance.value_or(core::GpuPlace{*r.gpu});
}
}  // namespace

std::string describe(const NamedThread& t) {
  const std::string process = std::to_string(t.process);
  return "TID " + std::to_string(t.tid) + " is a thread of process " + process +
         (t.comm ? " (" + *t.comm + ")" : std::string()) +
         ", not a process; gpureap signals whole processes, so nothing was chosen for it: "
         "`gpureap kill " +
         process + "` ends that process, all its threads with it";
}

std::string describe(const Request& r) {
  std::vector<std::string> chosen;
  if (!r.pids.empty()) {
    std::string pids;
    for (pid_t p : r.pids) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
    chosen.push_back((r.pids.size() == 1 ? "PID " : "PIDs ") + pids);
  }
  if (!r.chosen.empty()) chosen.push_back(r.chosen_by);
  if (r.ghosts) chosen.push_back("ghosts");
  if (r.stopped) chosen.push_back("stopped holders");
  std::string words;
  for (const auto& c : chosen) words += (words.empty() ? "" : " and ") + c;
  if (chosen.empty())
    words = r.gpu    ? "holders of GPU " + core::gpu_place_text(place_of(r))
            : r.user ? "GPU processes of user " + *r.user
                     : "nothing";
  else if (r.gpu)
    words += " on GPU " + core::gpu_place_text(place_of(r));
  if (r.user && (!chosen.empty() || r.gpu)) words += " of user " + *r.user;
  if (r.tree) words += ", with their descendants";
  if (r.group) words += ", with their process groups";
  return words;
}

}  // namespace gpureap::reap
