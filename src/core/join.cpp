// The join: every driver-listed PID against /proc, every device-file holder against the
// driver's lists. Memory is attributed only from the driver's lists: a CUDA process opens the
// device files of every visible GPU, so holding a GPU's own node does not mean using that GPU.
#include <algorithm>
#include <map>
#include <set>

#include "core/distributed_job.h"
#include "core/ghost_verdict.h"
#include "core/orphan.h"
#include "core/snapshot.h"

namespace gpureap::core {
namespace {

struct Listing {
  std::vector<GpuUse> gpus;
  std::optional<std::string> name;
};

// Every listed PID with its per-GPU uses. A PID the driver lists twice on one GPU (e.g. in
// the compute and graphics lists) counts once, with the larger known memory.
std::map<pid_t, Listing> listings(const DriverReading& drivers) {
  std::map<pid_t, Listing> out;
  for (const auto& gpu : drivers.gpus) {
    for (const auto& p : gpu.processes) {
      auto& l = out[p.pid];
      if (!l.name) l.name = p.name;
      auto it = std::find_if(l.gpus.begin(), l.gpus.end(),
                             [&](const GpuUse& u) { return u.index == gpu.index; });
      if (it == l.gpus.end()) {
        GpuUse use{gpu.index,
                   p.used_bytes,
                   p.kind,
                   p.sm_utilization_percent,
                   p.regions,
                   p.sharers,
                   p.gpu_instance_id,
                   p.compute_instance_id};
        use.serves_clients = p.serves_clients;
        use.server = p.server;
        if (p.serves_clients)
          for (const auto& q : gpu.processes)
            if (q.server == p.pid && q.pid != p.pid) use.clients.push_back(q.pid);
        l.gpus.push_back(std::move(use));
      } else if (p.used_bytes && (!it->used_bytes || *p.used_bytes > *it->used_bytes)) {
        it->used_bytes = p.used_bytes;
      }
    }
  }
  return out;
}

class Joiner {
 public:
  Joiner(const ProcView& proc, const DriverReading& drivers, const GhostVerdict& verdict,
         const ListedIdentities& identities)
      : proc_(proc), listed_(listings(drivers)), verdict_(verdict), identities_(identities) {
    for (const auto& p : proc_.processes)
      if (p.stat.is_zombie()) zombie_parents_.insert(p.stat.ppid);
    for (const auto& g : verdict_.ghosts) ghosts_[g.pid] = &g;
    for (const auto& job : distributed_jobs(proc_))
      if (job.stalled()) stalled_members_.insert(job.members.begin(), job.members.end());
  }

  std::vector<ProcessRow> rows() {
    std::vector<ProcessRow> out;
    for (const auto& p : proc_.processes) {
      auto l = listed_.find(p.stat.pid);
      // A number the driver lists that another process has now: the row is the listing's, a
      // gone one. The newcomer is not charged with it, and has no row of its own (the gone
      // row below names it); it is still an "other holder" of what it holds.
      if (identities_.reused(p.stat.pid)) continue;
      // A listed zombie has ended: its row is the gone listing's, below.
      if (l != listed_.end() && !p.is_live()) continue;
      if (!p.holds_device() && l == listed_.end()) continue;
      ProcessRow row;
      row.pid = p.stat.pid;
      row.process = p;
      if (l != listed_.end()) {
        row.listed_by_driver = true;
        row.gpus = l->second.gpus;
        row.driver_name = l->second.name;
      }
      if (auto it = verdict_.shares_context_of.find(row.pid);
          it != verdict_.shares_context_of.end())
        row.shares_context_of = it->second;
      if (auto it = verdict_.keeps.find(row.pid); it != verdict_.keeps.end())
        row.keeps = it->second;
      host_anomalies(p, row);
      out.push_back(std::move(row));
    }
    for (const auto& [pid, l] : listed_)
      if (const HostProcess* p = proc_.find(pid); !p || !p->is_live() || identities_.reused(pid))
        out.push_back(gone_row(pid, l));
    std::sort(out.begin(), out.end(),
              [](const ProcessRow& a, const ProcessRow& b) { return a.pid < b.pid; });
    return out;
  }

 private:
  void host_anomalies(const HostProcess& p, ProcessRow& row) const {
    if (p.stat.is_stopped()) row.anomalies.push_back(Anomaly::Stopped);
    if (p.stat.state == 'D') row.anomalies.push_back(Anomaly::Uninterruptible);
    // An orphan keeps a gone listed PID's context: the driver's evidence that its job is gone.
    // A leader that merely exited is none: a daemon that double-forked, or a job a shell
    // started in a subshell (its group's leader gone, its session's alive), runs on purpose.
    if (!row.keeps.empty() && orphan_evidence(proc_, p)) row.anomalies.push_back(Anomaly::Orphan);
    if (zombie_parents_.count(p.stat.pid)) row.anomalies.push_back(Anomaly::ZombieChildren);
    // A listed process that also keeps a gone PID's files owns a context of its own: it is
    // named among the ghost's keepers, but is not itself a ghost.
    if (!row.listed_by_driver && !row.keeps.empty())
      row.anomalies.push_back(Anomaly::InheritedHolder);
    if (stalled_members_.count(p.stat.pid)) row.anomalies.push_back(Anomaly::StalledJob);
  }

  ProcessRow gone_row(pid_t pid, const Listing& l) const {
    ProcessRow row;
    row.pid = pid;
    row.listed_by_driver = true;
    row.gpus = l.gpus;
    // No driver_name: the driver names a PID by the process under the number when asked, so a
    // gone listing's name is nobody's, or a newcomer's (named in `reused`), or a zombie's that
    // anyone could have left there; never evidence of the listed process.
    if (const ReusedPid* r = identities_.reused(pid)) row.reused = *r;
    row.anomalies.push_back(proc_.in_child_pid_namespace ? Anomaly::ForeignNamespace
                                                         : Anomaly::NoSuchProcess);
    if (auto it = ghosts_.find(pid); it != ghosts_.end() && it->second->leaked)
      row.anomalies.push_back(Anomaly::Leaked);
    return row;
  }

  const ProcView& proc_;
  std::map<pid_t, Listing> listed_;
  const GhostVerdict& verdict_;
  const ListedIdentities& identities_;
  std::map<pid_t, const Ghost*> ghosts_;
  std::set<pid_t> zombie_parents_;
  std::set<pid_t> stalled_members_;  // every process of a job with a rank gone
};

}  // namespace

bool ProcessRow::has(Anomaly a) const {
  return std::find(anomalies.begin(), anomalies.end(), a) != anomalies.end();
}

bool ProcessRow::is_ghost() const {
  return std::any_of(anomalies.begin(), anomalies.end(),
                     [](Anomaly a) { return core::is_ghost(a); });
}

uint64_t ProcessRow::listed_bytes() const {
  uint64_t sum = 0;
  for (const auto& u : gpus) sum += u.used_bytes.value_or(0);
  return sum;
}

Snapshot join(ProcView proc, DriverReading drivers, std::string hostname,
              std::chrono::system_clock::time_point now) {
  Snapshot s;
  s.timestamp = now;
  s.hostname = std::move(hostname);
  const ListedIdentities identities(proc, drivers);
  auto verdict = decide_ghosts(proc, drivers, identities);
  s.rows = Joiner(proc, drivers, verdict, identities).rows();
  s.ghosts = std::move(verdict.ghosts);
  s.drivers = std::move(drivers);
  s.proc = std::move(proc);
  return s;
}

std::vector<std::string> Snapshot::all_warnings() const {
  std::vector<std::string> out = warnings;
  out.insert(out.end(), proc.warnings.begin(), proc.warnings.end());
  for (const auto& b : drivers.backends)
    out.insert(out.end(), b.warnings.begin(), b.warnings.end());
  return out;
}

const HostProcess* ProcView::find(pid_t pid) const {
  auto it = std::lower_bound(processes.begin(), processes.end(), pid,
                             [](const HostProcess& p, pid_t v) { return p.stat.pid < v; });
  return it != processes.end() && it->stat.pid == pid ? &*it : nullptr;
}

const HostProcess* Snapshot::find(pid_t pid) const {
  return proc.find(pid);
}

const ProcessRow* Snapshot::row(pid_t pid) const {
  auto it = std::lower_bound(rows.begin(), rows.end(), pid,
                             [](const ProcessRow& r, pid_t v) { return r.pid < v; });
  return it != rows.end() && it->pid == pid ? &*it : nullptr;
}

std::optional<std::chrono::system_clock::time_point> Snapshot::start_time(
    const ProcessStat& st) const {
  if (!proc.boot_time || proc.ticks_per_second <= 0) return std::nullopt;
  auto ms = static_cast<long long>(st.start_ticks) * 1000 / proc.ticks_per_second;
  return std::chrono::system_clock::time_point(std::chrono::seconds(*proc.boot_time) +
                                               std::chrono::milliseconds(ms));
}

const Ghost* Snapshot::ghost(pid_t pid) const {
  auto it = std::lower_bound(ghosts.begin(), ghosts.end(), pid,
                             [](const Ghost& g, pid_t v) { return g.pid < v; });
  return it != ghosts.end() && it->pid == pid ? &*it : nullptr;
}

GpuMemorySummary Snapshot::memory_summary(const Gpu& gpu) const {
  if (whole) return whole->memory_summary(gpu);
  GpuMemorySummary m;
  std::set<pid_t> keepers;
  for (const auto& r : rows) {
    for (const auto& u : r.gpus) {
      if (u.index != gpu.index || !u.used_bytes) continue;
      const Ghost* g = ghost(r.pid);
      if (!g) {
        m.attributed_bytes += *u.used_bytes;
        continue;
      }
      m.ghost_bytes += *u.used_bytes;
      if (g->leaked) m.leaked_bytes += *u.used_bytes;
    }
  }
  for (const auto& g : ghosts) {
    if (std::find(g.gpus.begin(), g.gpus.end(), gpu.index) == g.gpus.end()) continue;
    keepers.insert(g.keepers.begin(), g.keepers.end());
    keepers.insert(g.listed_keepers.begin(), g.listed_keepers.end());
  }
  m.ghost_keepers = keepers.size();
  uint64_t listed = m.attributed_bytes + m.ghost_bytes;
  if (gpu.memory.used_bytes)
    m.unattributed_bytes = *gpu.memory.used_bytes > listed ? *gpu.memory.used_bytes - listed : 0;
  return m;
}

}  // namespace gpureap::core
