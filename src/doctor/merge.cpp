#include "doctor/merge.h"

#include <fmt/format.h>

#include <algorithm>

#include "text/byte_format.h"
#include "text/plural.h"

namespace gpureap::doctor {
namespace {

bool contains(const std::vector<pid_t>& v, pid_t p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

template <typename T>
void add_unique(std::vector<T>& to, const std::vector<T>& from) {
  for (const auto& x : from)
    if (std::find(to.begin(), to.end(), x) == to.end()) to.push_back(x);
}

// A gone PID kept by live processes: its PID first, then its keepers'.
bool is_kept_ghost(const Finding& f) {
  return f.code == FindingCode::NoSuchProcess && f.severity == Severity::Critical &&
         f.pids.size() > 1;
}

// A rule about one live process.
bool is_holder(const Finding& f) {
  switch (f.code) {
    case FindingCode::InheritedHolder:
    case FindingCode::OrphanHolder:
    case FindingCode::StoppedHolder:
    case FindingCode::UninterruptibleHolder:
    case FindingCode::UnreapedZombies:
    case FindingCode::ProtectedHolder:
      return f.pids.size() == 1;
    case FindingCode::DriverMissing:
    case FindingCode::DriverMismatch:
    case FindingCode::DriverNotAnswering:
    case FindingCode::GpuError:
    case FindingCode::DriverRecordLayout:
    case FindingCode::IncompleteView:
    case FindingCode::IpcResidue:
    case FindingCode::IpcUnused:
    case FindingCode::ForeignNamespace:
    case FindingCode::NoSuchProcess:
    case FindingCode::Releasing:
    case FindingCode::LeakedMemory:
    case FindingCode::UnattributedMemory:
    case FindingCode::GpuKernelError:
    case FindingCode::KeptByServer:
    case FindingCode::StalledJob:
      return false;
  }
  return false;
}

// `from`, a view of the problem `into` is, becomes its facets. A ghost's GPUs are where its
// memory is (`keep_gpus` false): its keeper's other device files do not widen them.
void absorb(Finding& into, Finding&& from, bool keep_evidence, bool keep_gpus = true) {
  into.facets.push_back({from.code, from.pids.empty() ? 0 : from.pids.front(), from.severity,
                         from.summary.empty() ? from.explanation : from.summary});
  for (auto& x : from.facets) into.facets.push_back(std::move(x));
  into.severity = std::max(into.severity, from.severity);
  if (keep_gpus) add_unique(into.gpus, from.gpus);
  add_unique(into.pids, from.pids);
  if (keep_evidence) {
    add_unique(into.evidence, from.evidence);
    add_unique(into.restricted_evidence, from.restricted_evidence);
  }
}

// Two gone PIDs that share a keeper are one problem: ending that keeper frees both.
void merge_shared_keepers(std::vector<Finding>& f) {
  for (size_t i = 0; i < f.size(); ++i) {
    if (!is_kept_ghost(f[i])) continue;
    for (size_t j = i + 1; j < f.size();) {
      bool shared =
          is_kept_ghost(f[j]) && std::any_of(f[j].pids.begin() + 1, f[j].pids.end(),
                                             [&](pid_t p) { return contains(f[i].pids, p); });
      if (!shared) {
        ++j;
        continue;
      }
      Finding other = std::move(f[j]);
      f.erase(f.begin() + static_cast<long>(j));
      auto& g = f[i];
      // The gone PIDs first (this finding's, those merged into it before, the other's), then
      // the keepers: pids[0] of each stays before any keeper.
      std::vector<pid_t> gone{g.pids.front()}, keepers;
      for (const auto& x : g.facets)
        if (x.code == FindingCode::NoSuchProcess) gone.push_back(x.pid);
      gone.push_back(other.pids.front());
      for (pid_t p : g.pids)
        if (!contains(gone, p) && !contains(keepers, p)) keepers.push_back(p);
      add_unique(keepers, std::vector<pid_t>(other.pids.begin() + 1, other.pids.end()));
      g.pids = gone;
      g.pids.insert(g.pids.end(), keepers.begin(), keepers.end());
      g.memory_bytes += other.memory_bytes;
      add_unique(g.gpus, other.gpus);
      add_unique(g.evidence, other.evidence);
      add_unique(g.restricted_evidence, other.restricted_evidence);
      if (!other.remedy.empty() && !g.remedy.empty())
        g.remedy.front().command += " " + std::to_string(other.pids.front());
      g.facets.push_back({other.code, other.pids.front(), other.severity, other.summary});
      // The summary says the merged memory, as the finding's figure does.
      g.summary = fmt::format("GPU {}: {} held by gone PIDs {} through {}", fmt::join(g.gpus, ","),
                              text::human_bytes(g.memory_bytes), fmt::join(gone, ", "),
                              text::plural(keepers.size(), "worker"));
    }
  }
}

void merge_into_ghosts(std::vector<Finding>& f) {
  for (size_t i = 0; i < f.size(); ++i) {
    if (!is_kept_ghost(f[i])) continue;
    for (size_t j = 0; j < f.size();) {
      bool keeper = j != i && is_holder(f[j]) && contains(f[i].pids, f[j].pids.front());
      if (!keeper) {
        ++j;
        continue;
      }
      // What inherited-holder and orphan-holder say is in their line; a stopped or stuck
      // keeper's facts (its state, its kernel stack) are not said elsewhere.
      bool facts =
          f[j].code != FindingCode::InheritedHolder && f[j].code != FindingCode::OrphanHolder;
      Finding other = std::move(f[j]);
      f.erase(f.begin() + static_cast<long>(j));
      if (j < i) --i;
      absorb(f[i], std::move(other), facts, false);
    }
  }
}

void merge_same_process(std::vector<Finding>& f) {
  for (size_t i = 0; i < f.size(); ++i) {
    if (!is_holder(f[i])) continue;
    for (size_t j = i + 1; j < f.size();) {
      if (!is_holder(f[j]) || f[j].pids.front() != f[i].pids.front()) {
        ++j;
        continue;
      }
      Finding other = std::move(f[j]);
      f.erase(f.begin() + static_cast<long>(j));
      // The most severe view names the problem; the other's steps are still steps for it.
      if (other.severity > f[i].severity) std::swap(other, f[i]);
      for (auto& s : other.remedy) {
        bool known = std::any_of(f[i].remedy.begin(), f[i].remedy.end(),
                                 [&](const RemedyStep& x) { return x.command == s.command; });
        if (!known) f[i].remedy.push_back({StepKind::Or, s.command, s.why});
      }
      absorb(f[i], std::move(other), true);
    }
  }
}

// The releases of one GPU are one: memory coming back.
void merge_releases(std::vector<Finding>& f) {
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i].code != FindingCode::Releasing) continue;
    for (size_t j = i + 1; j < f.size();) {
      bool same_gpu = f[j].code == FindingCode::Releasing &&
                      std::any_of(f[j].gpus.begin(), f[j].gpus.end(), [&](unsigned g) {
                        return std::find(f[i].gpus.begin(), f[i].gpus.end(), g) != f[i].gpus.end();
                      });
      if (!same_gpu) {
        ++j;
        continue;
      }
      Finding other = std::move(f[j]);
      f.erase(f.begin() + static_cast<long>(j));
      if (!other.pids.empty()) f[i].memory_bytes += other.memory_bytes;
      absorb(f[i], std::move(other), true);
    }
  }
}

// Steps after the first that do not say how they follow it are alternatives.
void order_steps(Finding& f) {
  for (size_t k = 1; k < f.remedy.size(); ++k)
    if (f.remedy[k].kind == StepKind::Run) f.remedy[k].kind = StepKind::Or;
}

}  // namespace

void merge_findings(std::vector<Finding>& findings) {
  merge_shared_keepers(findings);
  merge_into_ghosts(findings);
  merge_same_process(findings);
  merge_releases(findings);
  for (auto& f : findings) {
    order_steps(f);
    if (f.summary.empty())
      f.summary =
          std::string(to_string(f.code)) + (f.evidence.empty() ? "" : ": " + f.evidence.front());
  }
}

}  // namespace gpureap::doctor
