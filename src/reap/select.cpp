#include "reap/select.h"

#include <algorithm>
#include <set>

#include "backend/registry.h"
#include "core/gpu_index.h"
#include "core/gpu_place.h"
#include "core/gpu_resolve.h"
#include "core/listed_identity.h"
#include "reap/kin.h"

namespace gpureap::reap {
namespace {

std::string pid_words(const std::vector<pid_t>& pids, const char* separator) {
  std::string out;
  for (pid_t p : pids) out += (out.empty() ? "" : separator) + std::to_string(p);
  return out;
}

class Selector {
 public:
  Selector(const core::Snapshot& s, const Request& r, const Caller& c,
           const std::vector<NamedThread>& threads)
      : snap_(s), req_(r), caller_(c), threads_(threads), kin_(s) {}

  // Selectors choose (PIDs, --ghosts, --stopped, a diagnosis's or a policy's choice); --gpu and
  // --user choose only when no selector is given, and otherwise filter what the selectors chose:
  // a filter never adds a process. --tree and --group then widen the filtered choice.
  core::Result<Selection> run() {
    if (req_.gpu) {
      auto scope = gpu_scope(req_.instance.value_or(core::GpuPlace{*req_.gpu}));
      if (!scope) return scope.error();
      scope_ = *scope;
    }
    for (pid_t pid : req_.pids) named(pid);
    for (const auto& c : req_.chosen) chosen(c);
    if (req_.ghosts) ghosts();
    if (req_.stopped) stopped();
    if (!req_.has_selector()) {
      if (scope_)
        gpu_holders(*scope_);
      else if (req_.user)
        user_holders();
    } else if (scope_) {
      keep_on_gpu(*scope_);
    }
    if (req_.tree) tree();
    if (req_.group) group();
    return std::move(out_);
  }

 private:
  // GPU N (or its instance) as the filter and the standing-alone selector see it: a process is
  // in it by core::in_place, the rule every path follows.
  struct GpuScope {
    core::GpuPlace place;
    const core::Gpu* gpu = nullptr;

    bool covers(const core::GpuUse& u) const {
      return u.index == place.index &&
             (!place.gpu_instance || u.gpu_instance_id == place.gpu_instance) &&
             (!place.compute_instance || u.compute_instance_id == place.compute_instance);
    }
    std::string words() const { return core::gpu_place_text(place); }
  };

  void add(pid_t pid, Reason reason) {
    auto& reasons = out_.reasons[pid];
    if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end())
      reasons.push_back(reason);
  }

  void named(pid_t pid) {
    const core::HostProcess* p = snap_.find(pid);
    const core::ProcessRow* row = snap_.row(pid);
    // The driver's PID was typed, but the number is another process's now: the typed PID
    // means the listed process, which is gone, never the newcomer.
    if (row && row->reused) {
      out_.notes.push_back("PID " + std::to_string(pid) + " is listed by the driver, but " +
                           "the process that has the number now is not the listed one (it " +
                           core::describe(*row->reused) + "): it is left alone");
      p = nullptr;
    }
    if (p) add(pid, {ReasonKind::Named});
    if (row && row->listed_by_driver && kin_.is_gone(pid)) resolve_gone(pid, true);
    if (p || (row && row->listed_by_driver)) return;
    if (const NamedThread* t = thread(pid))
      note_thread(*t);
    else
      out_.notes.push_back("PID " + std::to_string(pid) +
                           ": no such process, and no GPU driver lists it");
  }

  const NamedThread* thread(pid_t tid) const {
    auto it = std::find_if(threads_.begin(), threads_.end(),
                           [&](const NamedThread& t) { return t.tid == tid; });
    return it == threads_.end() ? nullptr : &*it;
  }

  // Never the thread's process in its place: a thread's number is typed by mistake as often as
  // not (from top's thread view, a log), and ending the process is the user's choice to make.
  // Told once, however often it was typed.
  void note_thread(const NamedThread& t) {
    if (std::none_of(out_.threads.begin(), out_.threads.end(),
                     [&](const NamedThread& x) { return x.tid == t.tid; }))
      out_.threads.push_back(t);
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
    if (ghost && ghost->kept_by_server())
      note_served(*ghost);
    else if (g.keepers.empty())
      note_unkept(g);
    out_.gone.push_back(std::move(g));
  }

  // A gone client of a server of other processes' work (a WorkServer): the server keeps its
  // context, and ending the server ends every client's work, so it is never chosen; its
  // vendor's own command ends the one client.
  void note_served(const core::Ghost& ghost) {
    for (pid_t server : ghost.servers) {
      const backend::WorkServer* ws = nullptr;
      for (unsigned index : ghost.gpus)
        if (const core::Gpu* gpu = snap_.gpu(index); gpu && !ws)
          ws = backend::work_server_of(gpu->backend);
      const std::string name = ws ? ws->name : "the server";
      std::string note = "PID " + std::to_string(ghost.pid) + " is gone, but " + name + " PID " +
                         std::to_string(server) +
                         " still runs its work; gpureap does not end the server";
      if (ws && !ws->end_client.empty())
        note += ": `" + backend::fill_client(ws->end_client, server, ghost.pid) +
                "` ends that client's work";
      if (ws && !ws->restart.empty())
        note += std::string(ws->end_client.empty() ? ": " : ", or ") + "`" + ws->restart +
                "` restarts it (" + ws->restart_effect + ")";
      out_.notes.push_back(note);
    }
  }

  void note_unkept(GoneListing& g) {
    std::string who = "PID " + std::to_string(g.pid);
    if (g.foreign) {
      out_.notes.push_back(who +
                           " is listed by the driver but belongs to another PID namespace: "
                           "it is not visible here; run gpureap on the host");
      return;
    }
    const core::Ghost* ghost = snap_.ghost(g.pid);
    g.leaked = ghost && ghost->leaked;
    auto others = kin_.other_holders(g.pid);
    // The number's newcomer (core::ReusedPid) is no PID to name: `gpureap kill N` means the
    // gone listing, never the process that took its number.
    const bool newcomer_holds = std::erase(others, g.pid) > 0;
    if (!others.empty()) {
      out_.notes.push_back(who +
                           " is gone and no process is known to keep its memory; other processes "
                           "hold that GPU's device files, none of its job: if they are its "
                           "leftovers, name them: `gpureap kill " +
                           pid_words(others, " ") + "`");
      return;
    }
    if (newcomer_holds) {
      out_.notes.push_back(
          who +
          " is gone and no process is known to keep its memory; the process "
          "that has the number now holds that GPU's device files, but it is "
          "not the listed one" +
          std::string(g.leaked ? ": a leaked context; only a GPU reset frees it" : ""));
      return;
    }
    const auto display = display_node_holders(g);
    if (!display.empty()) {
      // A display node never keeps a compute context, but its holder blocks the reset that
      // frees a leaked one: the reset's own check names it.
      out_.notes.push_back(who +
                           " is gone and no process holds a file of its GPU that can keep "
                           "its context; PID" +
                           std::string(display.size() == 1 ? " " : "s ") +
                           pid_words(display, ", ") + " hold" + (display.size() == 1 ? "s" : "") +
                           " only its display nodes" +
                           std::string(g.leaked ? ": a leaked context; only a GPU reset frees it, "
                                                  "and `gpureap reset` says what it needs ended"
                                                : ""));
      return;
    }
    out_.notes.push_back(who + " is gone and no process holds its GPU's device files" +
                         std::string(g.leaked
                                         ? ": a leaked context; only a GPU reset frees it"
                                         : " that gpureap could inspect; run as root to see all"));
  }

  // Live processes that reach one of the gone listing's GPUs only through a display driver's
  // node (core::DeviceHold::may_keep_context).
  std::vector<pid_t> display_node_holders(const GoneListing& g) const {
    std::vector<pid_t> out;
    for (const auto& p : snap_.proc.processes) {
      if (!p.is_live()) continue;
      bool display = false, context = false;
      for (const auto& use : g.gpus)
        if (const core::Gpu* gpu = snap_.gpu(use.index))
          for (const auto& d : p.devices) {
            if (!d.reaches(*gpu)) continue;
            (d.may_keep_context(*gpu) ? context : display) = true;
          }
      if (display && !context) out.push_back(p.stat.pid);
    }
    return out;
  }

  core::Result<GpuScope> gpu_scope(const core::GpuPlace& place) {
    // A place a request names (a policy's `gpu`, a caller's own) is checked by the resolver every
    // `--gpu` goes through, and refused in its words.
    if (auto problem = core::resolve_gpu(snap_, core::gpu_place_text(place)).problem)
      return problem->error;
    GpuScope scope{place, snap_.gpu(place.index)};
    bool by_files = !scope.gpu->device_numbers.empty();
    if (place.gpu_instance) {
      by_files = std::any_of(
          scope.gpu->instances.begin(), scope.gpu->instances.end(),
          [&](const core::GpuInstance& i) {
            return i.gpu_instance_id == *place.gpu_instance && !i.device_numbers.empty() &&
                   (!place.compute_instance || i.compute_instance_id == place.compute_instance);
          });
      if (!by_files)
        out_.notes.push_back("the driver does not tell " + scope.words() +
                             "'s capability files; only the processes it lists there, and "
                             "their jobs, are selected");
    } else if (!by_files) {
      out_.notes.push_back("the driver does not tell GPU " + std::to_string(place.index) +
                           "'s device file; only the processes it lists there, and their jobs, "
                           "are selected");
    }
    if (auto source = core::gpu_identity_source(*scope.gpu)) out_.notes.push_back(*source);
    return scope;
  }

  // The GPU instance the driver lists the row in on GPU `index`, if any.
  static std::optional<unsigned> listed_instance(const core::ProcessRow& row, unsigned index) {
    for (const auto& u : row.gpus)
      if (u.index == index && u.gpu_instance_id) return u.gpu_instance_id;
    return std::nullopt;
  }

  static bool listed_on(const core::ProcessRow* row, const GpuScope& scope) {
    return row && row->listed_by_driver &&
           std::any_of(row->gpus.begin(), row->gpus.end(),
                       [&](const core::GpuUse& u) { return scope.covers(u); });
  }

  // --gpu N alone: what the driver lists there, and every other process in it by
  // core::in_place: a gone listing's keepers, a listed process's job, and holders of its files
  // with no listed memory elsewhere (they may keep a context or block a reset). A process whose
  // job is listed only on other GPUs merely sees this one (CUDA opens every visible GPU's file).
  void gpu_holders(const GpuScope& scope) {
    for (const auto& row : snap_.rows) {
      if (listed_on(&row, scope)) {
        if (kin_.is_gone(row.pid))
          resolve_gone(row.pid);
        else
          add(row.pid, {ReasonKind::ListedOnGpu, scope.place.index, std::nullopt, std::nullopt,
                        listed_instance(row, scope.place.index)});
        continue;
      }
      if (row.listed_by_driver || !row.process || row.process->stat.is_zombie() ||
          !core::in_place(snap_, row, scope.place))
        continue;
      add(row.pid, {ReasonKind::HoldsDevice, scope.place.index, std::nullopt, std::nullopt,
                    scope.place.gpu_instance});
    }
  }

  // Whether one reason for choosing `pid` concerns GPU N, by the rule --gpu N alone follows
  // (core::in_place); a keeper chosen for a gone PID is where that PID's memory is.
  bool on_gpu(pid_t pid, const Reason& reason, const GpuScope& scope) const {
    if (reason.kind == ReasonKind::InheritedHolder && reason.pid)
      return listed_on(snap_.row(*reason.pid), scope);
    const core::ProcessRow* row = snap_.row(pid);
    return row && core::in_place(snap_, *row, scope.place);
  }

  // --gpu N with a selector: only what was chosen for GPU N stays, and only for that reason.
  void keep_on_gpu(const GpuScope& scope) {
    size_t left_out = 0;
    std::erase_if(out_.gone, [&](const GoneListing& g) {
      bool off = std::none_of(g.gpus.begin(), g.gpus.end(),
                              [&](const core::GpuUse& u) { return scope.covers(u); });
      left_out += off;
      return off;
    });
    for (auto it = out_.reasons.begin(); it != out_.reasons.end();) {
      std::erase_if(it->second, [&](const Reason& r) { return !on_gpu(it->first, r, scope); });
      if (it->second.empty()) {
        ++left_out;
        it = out_.reasons.erase(it);
      } else {
        ++it;
      }
    }
    if (left_out > 0)
      out_.notes.push_back(std::to_string(left_out) + " chosen process" +
                           (left_out == 1 ? "" : "es") + " left out: not on GPU " + scope.words());
  }

  void ghosts() {
    for (const auto& row : snap_.rows) {
      // A listed PID that is gone (absent, or a zombie whose children keep its files).
      if (row.listed_by_driver && kin_.is_gone(row.pid)) {
        resolve_gone(row.pid);
        continue;
      }
      if (!row.process || row.process->stat.is_zombie()) continue;
      const core::HostProcess& p = *row.process;
      if (row.has(core::Anomaly::InheritedHolder))
        add(row.pid,
            {ReasonKind::Ghost, std::nullopt, std::nullopt, core::Anomaly::InheritedHolder});
      // An orphan is a leftover only when it holds the GPU for nobody: a listed one uses its
      // own memory, and one that shares a live listed process's open file is that job's worker.
      if (row.has(core::Anomaly::Orphan) && p.holds_device() && !row.listed_by_driver &&
          (row.shares_context_of.empty() || !row.keeps.empty()))
        add(row.pid, {ReasonKind::Ghost, std::nullopt, std::nullopt, core::Anomaly::Orphan});
    }
  }

  // --stopped: holders someone paused (Ctrl-Z, a scheduler's suspend). A paused job is alive
  // and is never a ghost; it is chosen only by name or by this selector.
  void stopped() {
    for (const auto& row : snap_.rows) {
      if (!row.process || !row.has(core::Anomaly::Stopped)) continue;
      if (row.process->holds_device() || row.listed_by_driver)
        add(row.pid, {ReasonKind::StoppedHolder});
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
    // Killed trainers' workers share the gone PID's group: that group is what keeps it. But a
    // number is free once its process is reaped and no group of it is left, and anyone may take
    // it and lead a group of it (setsid) that outlives them: a group of the gone number is the
    // gone job's only where one of its keepers (the kernel's word: they share its open files)
    // is in it. A reused number's group is the newcomer's, never the gone job's.
    for (const auto& g : out_.gone) {
      if (const core::ProcessRow* row = snap_.row(g.pid); row && row->reused) continue;
      if (kin_.group_members(g.pid).empty()) continue;
      if (std::any_of(g.keepers.begin(), g.keepers.end(), [&](pid_t k) {
            const core::HostProcess* p = snap_.find(k);
            return p && p->stat.pgid == g.pid;
          })) {
        groups.insert(g.pid);
        continue;
      }
      out_.notes.push_back("process group " + std::to_string(g.pid) +
                           " was not expanded: none of gone PID " + std::to_string(g.pid) +
                           "'s keepers is in it, so the number may be another job's now; "
                           "name its PIDs instead");
    }
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
  const std::vector<NamedThread>& threads_;
  Kin kin_;
  std::optional<GpuScope> scope_;
  Selection out_;
};

}  // namespace

core::Result<Selection> select_targets(const core::Snapshot& snapshot, const Request& request,
                                       const Caller& caller,
                                       const std::vector<NamedThread>& threads) {
  return Selector(snapshot, request, caller, threads).run();
}

}  // namespace gpureap::reap
