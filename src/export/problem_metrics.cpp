#include "export/problem_metrics.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "metric/names.h"

namespace gpureap::exporter {
namespace {

const core::GpuUse* problem_use_on(const core::ProcessRow& row, unsigned gpu) {
  for (const auto& u : row.gpus)
    if (u.index == gpu) return &u;
  return nullptr;
}

// Who keeps a gone PID's memory: its holders, or the server that ran its GPU work (WorkServer).
std::set<pid_t> ghost_keepers(const core::Ghost& g) {
  std::set<pid_t> all(g.keepers.begin(), g.keepers.end());
  all.insert(g.listed_keepers.begin(), g.listed_keepers.end());
  all.insert(g.servers.begin(), g.servers.end());
  return all;
}

std::string keepers_label(const core::Ghost& g) {
  const auto all = ghost_keepers(g);
  std::string out;
  size_t n = 0;
  for (pid_t p : all) {
    if (n == kMaxKeepersLabelled) {
      out += ",+" + std::to_string(all.size() - n);
      break;
    }
    if (!out.empty()) out += ',';
    out += std::to_string(p);
    ++n;
  }
  return out;
}

// The user and pod a problem is charged to: the process's own, for a gone PID its first
// keeper's that has one (the gone process's went with it).
struct Owner {
  std::string user, pod_namespace, pod_name;
};

Owner owner_of(const core::ProcessRow& row) {
  Owner o;
  if (!row.process) return o;
  o.user = user_label(row);
  if (const auto* c = row.process->verified_container()) {
    o.pod_namespace = c->pod_namespace.value_or("");
    o.pod_name = c->pod_name.value_or("");
  }
  return o;
}

Owner ghost_owner(const core::Snapshot& s, const core::Ghost& g) {
  Owner first;
  for (pid_t k : ghost_keepers(g)) {
    const auto* row = s.row(k);
    if (!row) continue;
    auto o = owner_of(*row);
    if (first.user.empty()) first = o;
    if (!o.pod_name.empty()) return o;
  }
  return first;
}

std::string comm_of(const core::ProcessRow& row) {
  return row.process ? row.process->stat.comm : row.driver_name.value_or("");
}

}  // namespace

void problem_families(const MetricsInput& in, std::vector<MetricFamily>& out) {
  const auto& s = in.snapshot;
  out.push_back(
      MetricFamily{metric::kSampleTimestamp,
                   "When the daemon took the sample these metrics describe, seconds since the "
                   "epoch (it stops moving when sampling is stuck)"}
          .add({}, std::chrono::duration<double>(s.timestamp.time_since_epoch()).count()));
  MetricFamily f{metric::kProblemProcessMemory,
                 "GPU memory the driver lists for a process with a problem a node's user acts "
                 "on: a gone PID kept alive by others (ghost, keepers names them: holders, or "
                 "the server that ran its work) or by none (leaked), a stopped or "
                 "uninterruptible process; one series per PID and GPU while it lasts"};
  for (const auto& g : s.drivers.gpus) {
    std::vector<Label> gpu{{metric::label::kGpu, std::to_string(g.index)},
                           {metric::label::kUuid, g.uuid.value_or("")},
                           {metric::label::kPciBusId, g.pci_bus_id.value_or("")},
                           {metric::label::kVendor, g.vendor}};
    auto add = [&](const core::ProcessRow& row, const char* problem, const std::string& keepers,
                   const Owner& o) {
      const auto* u = problem_use_on(row, g.index);
      auto labels = gpu;
      for (Label l : std::vector<Label>{{metric::label::kPid, std::to_string(row.pid)},
                                        {metric::label::kProblem, problem},
                                        {metric::label::kKeepers, keepers},
                                        {metric::label::kComm, comm_of(row)},
                                        {metric::label::kUser, o.user},
                                        {metric::label::kPodNamespace, o.pod_namespace},
                                        {metric::label::kPodName, o.pod_name}})
        labels.push_back(std::move(l));
      // On a split GPU, the GPU instance it runs in.
      if (u && u->gpu_instance_id)
        labels.push_back({metric::label::kGpuInstance, std::to_string(*u->gpu_instance_id)});
      f.add(std::move(labels), u && u->used_bytes ? static_cast<double>(*u->used_bytes) : 0);
    };
    for (const auto& ghost : s.ghosts) {
      if (std::find(ghost.gpus.begin(), ghost.gpus.end(), g.index) == ghost.gpus.end()) continue;
      const auto* row = s.row(ghost.pid);
      if (!row) continue;
      if (ghost.leaked)
        add(*row, "leaked", "", {});
      else
        add(*row, "ghost", keepers_label(ghost), ghost_owner(s, ghost));
    }
    for (const auto& row : s.rows) {
      if (!problem_use_on(row, g.index) || s.ghost(row.pid)) continue;
      if (row.has(core::Anomaly::Stopped)) add(row, "stopped", "", owner_of(row));
      if (row.has(core::Anomaly::Uninterruptible)) add(row, "uninterruptible", "", owner_of(row));
    }
  }
  out.push_back(std::move(f));
}

}  // namespace gpureap::exporter
