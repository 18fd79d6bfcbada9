#include "reap/select.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <functional>
#include <set>

#include "reap/kin.h"

namespace gpureap::reap {
namespace {

class Selector {
 public:
  Selector(const core::Snapshot& s, const Request& r, const Caller& c)
      : snap_(s), req_(r), caller_(c), kin_(s) {}

  core::Result<Selection> run() {
    for (pid_t pid : req_.pids) named(pid);
    for (const auto& c : req_.chosen) chosen(c);
    if (req_.gpu) {
      if (auto error = gpu(*req_.gpu)) return *error;
    }
    if (req_.ghosts) ghosts();
    if (req_.user && req_.pids.empty() && !req_.gpu && !req_.ghosts) user_holders();
    if (req_.tree) tree();
    if (req_.group) group();
    return std::move(out_);
  }

 private:
  void add(pid_t pid, Reason reason) {
    auto& reasons = out_.reasons[pid];
    if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end())
      reasons.push_back(reason);
  }

  void named(pid_t pid) {
    const core::HostProcess* p = snap_.find(pid);
    const core::ProcessRow* row = snap_.row(pid);
    if (p) add(pid, {ReasonKind::Named});
    if (row && row->listed_by_driver && kin_.is_gone(pid)) resolve_gone(pid, true);
    if (!p && !(row && row->listed_by_driver))
      out_.notes.push_back("PID " + std::to_string(pid) +
                           ": no such process, and no GPU driver lists it");
  }

  void chosen(const Chosen& c) {
    const core::ProcessRow* row = snap_.row(c.pid);
    if (row && row->listed_by_driver && kin_.is_gone(c.pid)) return resolve_gone(c.pid);
    const core::HostProcess* p = snap_.find(c.pid);
    if (p && !p->stat.is_zombie()) add(c.pid, {c.kind, std::nullopt, std::nullopt, c.anomaly});
  }

  // A listed PID that is gone: its memory lives as long as its keepers do. A keeper the
  // driver lists itself runs a job of its own: only a user who typed the gone PID ends it.
  void resolve_gone(pid_t pid, bool typed = false) {
    if (std::any_of(out_.gone.begin(), out_.gone.end(),
                    [&](const GoneListing& g) { return g.pid == pid; }))
      return;
    const core::ProcessRow* row = snap_.row(pid);
    GoneListing g;
    g.pid = pid;
    g.driver_name = row->driver_name;
    g.gpus = row->gpus;
    g.foreign = row->has(core::Anomaly::ForeignNamespace);
    const core::Ghost* ghost = snap_.ghost(pid);
    if (ghost) {
      g.keepers = ghost->keepers;
      if (typed)
        g.keepers.insert(g.keepers.end(), ghost->listed_keepers.begin(),
                         ghost->listed_keepers.end());
      else
        for (pid_t k : ghost->listed_keepers)
          out_.notes.push_back(
              "PID " + std::to_string(k) + " may also keep gone PID " + std::to_string(pid) +
              "'s context, but the driver lists it with a context of its own: `gpureap kill " +
              std::to_string(pid) + "` ends it too");
    }
    for (pid_t k : g.keepers) add(k, {ReasonKind::InheritedHolder, std::nullopt, pid});
    if (g.keepers.empty()) note_unkept(g);
    out_.gone.push_back(std::move(g));
  }

  void note_unkept(GoneListing& g) {
    std::string who = "PID " + std::to_string(g.pid);
    if (g.foreign) {
      out_.notes.push_back(who +
                           " is listed by the driver but belongs to another PID namespace: "
                           "it is not visible here; run gpureap on the host");
      return;
    }
    auto others = kin_.other_holders(g.pid);
    if (!others.empty()) {
      std::string list;
      for (pid_t o : others) list += (list.empty() ? "" : ", ") + std::to_string(o);
      out_.notes.push_back(who +
                           " is gone and nothing in its process tree or group holds its GPU; "
                           "other processes hold that GPU's device files (" +
                           list + "): name them or use --ghosts if they are its leftovers");
      return;
    }
    g.leaked = snap_.complete();
    out_.notes.push_back(who + " is gone and no process holds its GPU's device files" +
                         std::string(g.leaked
                                         ? ": a leaked context; only a GPU reset frees it"
                                         : " that gpureap could inspect; run as root to see all"));
  }

  std::optional<core::Error> gpu(unsigned index) {
    // Without a driver, GPU N means /dev/nvidiaN: the one naming of GPU files that an index
    // maps to without a driver to ask.
    std::function<bool(const core::HostProcess&)> holds = [index](const core::HostProcess& p) {
      return std::any_of(p.devices.begin(), p.devices.end(), [&](const core::DeviceHold& h) {
        return h.kind == "nvidia" && h.device && ::minor(*h.device) == index;
      });
    };
    if (snap_.drivers.any_available()) {
      const core::Gpu* g = snap_.gpu(index);
      if (!g)
        return core::Error{"GPU " + std::to_string(index) + " does not exist",
                           "the driver reports " + std::to_string(snap_.drivers.gpus.size()) +
                               " GPU(s); see `gpureap ps` for their indices"};
      holds = nullptr;
      if (!g->device_numbers.empty())
        holds = [g](const core::HostProcess& p) { return p.holds_gpu(*g); };
      else
        out_.notes.push_back("the driver does not tell GPU " + std::to_string(index) +
                             "'s device file; only the processes it lists are selected");
      for (const auto& row : snap_.rows) {
        if (!row.listed_by_driver) continue;
        bool on_gpu = std::any_of(row.gpus.begin(), row.gpus.end(),
                                  [&](const core::GpuUse& u) { return u.index == index; });
        if (!on_gpu) continue;
        if (kin_.is_gone(row.pid))
          resolve_gone(row.pid);
        else
          add(row.pid, {ReasonKind::ListedOnGpu, index});
      }
    } else {
      out_.notes.push_back("no GPU driver: --gpu " + std::to_string(index) +
                           " selects the holders of /dev/nvidia" + std::to_string(index));
    }
    if (!holds) return std::nullopt;
    // A process the driver lists only on other GPUs merely sees this one (CUDA opens every
    // visible GPU's file); an unlisted holder may be keeping a context or blocking a reset.
    for (const auto& p : snap_.proc.processes) {
      if (p.stat.is_zombie() || !holds(p)) continue;
      const core::ProcessRow* row = snap_.row(p.stat.pid);
      if (row && row->listed_by_driver) continue;
      add(p.stat.pid, {ReasonKind::HoldsDevice, index});
    }
    return std::nullopt;
  }

  void ghosts() {
    for (const auto& row : snap_.rows) {
      if (!row.process) {
        if (row.has(core::Anomaly::NoSuchProcess) || row.has(core::Anomaly::ForeignNamespace))
          resolve_gone(row.pid);
        continue;
      }
      const core::HostProcess& p = *row.process;
      if (p.stat.is_zombie()) continue;
      bool holds = p.holds_device() || row.listed_by_driver;
      if (row.has(core::Anomaly::InheritedHolder))
        add(row.pid,
            {ReasonKind::Ghost, std::nullopt, std::nullopt, core::Anomaly::InheritedHolder});
      // An orphan is a leftover only when it holds the GPU for nobody: a listed one uses its
      // own memory, and one that shares a live listed process's open file is that job's worker.
      if (row.has(core::Anomaly::Orphan) && p.holds_device() && !row.listed_by_driver &&
          (row.shares_context_of.empty() || !row.keeps.empty()))
        add(row.pid, {ReasonKind::Ghost, std::nullopt, std::nullopt, core::Anomaly::Orphan});
      if (row.has(core::Anomaly::Stopped) && holds)
        add(row.pid, {ReasonKind::Ghost, std::nullopt, std::nullopt, core::Anomaly::Stopped});
    }
  }

  void user_holders() {
    for (const auto& row : snap_.rows)
      if (row.process && !row.process->stat.is_zombie()) add(row.pid, {ReasonKind::UserHolder});
  }

  std::vector<pid_t> roots() const {
    std::vector<pid_t> out;
    for (const auto& [pid, reasons] : out_.reasons) out.push_back(pid);
    return out;
  }

  void tree() {
    for (pid_t root : roots())
      for (pid_t d : kin_.descendants(root)) {
        auto it = out_.reasons.find(d);
        bool has_tree_reason =
            it != out_.reasons.end() &&
            std::any_of(it->second.begin(), it->second.end(),
                        [](const Reason& r) { return r.kind == ReasonKind::Descendant; });
        if (!has_tree_reason) add(d, {ReasonKind::Descendant, std::nullopt, root});
      }
  }

  void group() {
    std::set<pid_t> groups;
    for (pid_t root : roots()) {
      const core::HostProcess* p = snap_.find(root);
      if (p) groups.insert(p->stat.pgid);
    }
    // Killed trainers' workers share the gone PID's group: that group is what keeps it.
    for (const auto& g : out_.gone) groups.insert(g.pid);
    for (pid_t pgid : groups) {
      // Group 0 holds kernel threads and group 1 everything init started without a group
      // of its own; gpureap's own group holds the shell that runs it. None is a job.
      if (pgid <= 1 || pgid == caller_.pgid) {
        out_.notes.push_back("process group " + std::to_string(pgid) + " was not expanded: " +
                             (pgid <= 1 ? "it is the system's, not a job's"
                                        : "gpureap itself runs in it; name its PIDs instead"));
        continue;
      }
      for (pid_t m : kin_.group_members(pgid))
        add(m, {ReasonKind::ProcessGroup, std::nullopt, pgid});
    }
  }

  const core::Snapshot& snap_;
  const Request& req_;
  const Caller& caller_;
  Kin kin_;
  Selection out_;
};

}  // namespace

core::Result<Selection> select_targets(const core::Snapshot& snapshot, const Request& request,
                                       const Caller& caller) {
  return Selector(snapshot, request, caller).run();
}

}  // namespace gpureap::reap
