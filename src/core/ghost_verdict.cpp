#include "core/ghost_verdict.h"

#include <algorithm>
#include <set>

namespace gpureap::core {
namespace {

struct Group {
  std::vector<const HostProcess*> members;  // in pid order
  std::optional<std::string> id;            // empty: a guessed group of one process
};

void add_unique(std::vector<pid_t>& v, pid_t pid) {
  if (std::find(v.begin(), v.end(), pid) == v.end()) v.push_back(pid);
}

class Decider {
 public:
  Decider(const ProcView& proc, const DriverReading& drivers, const ListedIdentities& identities)
      : proc_(proc), drivers_(drivers), identities_(identities) {
    for (const auto& g : drivers_.gpus)
      for (const auto& p : g.processes)
        if (identities_.owner(p.pid)) listed_[p.pid].insert(g.index);
  }

  GhostVerdict run() {
    std::map<pid_t, Ghost> ghosts;
    for (const auto& g : drivers_.gpus) {
      if (g.processes_error) continue;
      gpu(g, ghosts);
    }
    for (auto& [pid, ghost] : ghosts) {
      // Other holders keep nothing that is proven: the memory is a leak unless a keeper is.
      ghost.leaked = !ghost.kept() && !ghost.kept_by_server() && proc_.holders_complete();
      for (pid_t k : ghost.keepers) add_unique(out_.keeps[k], pid);
      for (pid_t k : ghost.listed_keepers) add_unique(out_.keeps[k], pid);
      for (auto* v : {&ghost.keepers, &ghost.listed_keepers, &ghost.other_holders, &ghost.servers})
        std::sort(v->begin(), v->end());
      out_.ghosts.push_back(std::move(ghost));
    }
    return std::move(out_);
  }

 private:
  const HostProcess* find(pid_t pid) const { return proc_.find(pid); }

  // The live process is the one the driver lists under its number (ListedIdentities).
  bool owned(pid_t pid) const { return identities_.owner(pid) != nullptr; }

  bool listed_on(pid_t pid, unsigned gpu) const {
    auto it = listed_.find(pid);
    return it != listed_.end() && it->second.count(gpu);
  }

  bool listed_anywhere(pid_t pid) const { return listed_.count(pid) > 0; }

  bool descends_from(const HostProcess& p, pid_t ancestor) const {
    const HostProcess* cur = &p;
    for (int depth = 0; cur && depth < 4096; ++depth) {
      if (cur->stat.ppid == ancestor) return true;
      if (cur->stat.ppid <= 1) return false;
      cur = find(cur->stat.ppid);
    }
    return false;
  }

  // Whether the process that had the number `pid` when a process started at `when` (a start
  // tick) can be the one the driver lists, by the ends the daemon saw (ProcView::ends): not when
  // the listed process had ended by then, nor when another process took the number after the
  // listing was first seen and before `when`, nor before the listed process began (its start
  // is known from the first sighting, ProcView::listed_first_process, or its recorded life).
  // Without the daemon's records, nothing says no. `forked`: the process started at `when` was
  // forked by that one (the daemon saw the fork), so it began before that one ended, in the same
  // tick at the latest. A record of an end may have been evicted (each number keeps its last
  // few): a missing life never grants anything.
  bool could_be_listed(pid_t pid, uint64_t when, bool forked = false) const {
    auto first = proc_.listed_first_process.find(pid);
    if (first != proc_.listed_first_process.end() && when < first->second) return false;
    auto since = proc_.listed_since.find(pid);
    auto ends = proc_.ends.find(pid);
    if (since == proc_.listed_since.end() || ends == proc_.ends.end()) return true;
    for (const auto& life : ends->second) {
      // The listed process: it held a GPU file and had the number when the listing was seen,
      // or it is the holder that ended just before that sighting, whose context the listing is
      // taken to be (engine/listed_since.h).
      const bool listed_one =
          life.held &&
          ((life.start_ticks <= since->second && since->second <= life.end_ticks) ||
           (first != proc_.listed_first_process.end() && life.start_ticks == first->second));
      if (listed_one) {
        // Ticks are 10 ms: a process that started in the tick its number's listed owner ended
        // in may have come after it, and is no proven kin; one that started before the owner
        // did had the number from someone else.
        if (when < life.start_ticks) return false;
        if (forked ? life.end_ticks < when : life.end_ticks <= when) return false;
        continue;
      }
      // Another process's life under the number: what started in it is that process's (an
      // earlier owner's children are not the listed one's), and so is what started after it
      // once it had the number when, or after, the listing was seen.
      if (when >= life.start_ticks && (when <= life.end_ticks || life.end_ticks >= since->second))
        return false;
    }
    return true;
  }

  // The daemon saw the gone PID fork `p`, or fork one of its live ancestors, and then exit.
  bool seen_inheriting(const HostProcess& p, pid_t pid) const {
    const HostProcess* cur = &p;
    for (int depth = 0; cur && depth < 4096; ++depth) {
      auto it = proc_.exited_parents.find(cur->stat.pid);
      if (it != proc_.exited_parents.end() && it->second == pid)
        return could_be_listed(pid, cur->stat.start_ticks, true);
      if (cur->stat.ppid <= 1) return false;
      cur = find(cur->stat.ppid);
    }
    return false;
  }

  // Part of the gone PID's job, on the kernel's word (see decide_ghosts): how a dead trainer's
  // workers look once they have been reparented. A number is evidence only while it cannot
  // name another process: a reused PID's group and children are the new process's, and a
  // zombie leader's user and start time must agree.
  bool kin_of(const HostProcess& p, pid_t pid) const {
    if (seen_inheriting(p, pid)) return true;
    if (identities_.reused(pid) || !could_be_listed(pid, p.stat.start_ticks)) return false;
    if (const HostProcess* leader = find(pid)) {
      if (p.stat.start_ticks < leader->stat.start_ticks) return false;
      auto uid = [](const HostProcess& h) { return h.details ? h.details->uid : std::nullopt; };
      if (uid(p) && uid(*leader) && *uid(p) != *uid(*leader)) return false;
    }
    return p.stat.pgid == pid || p.stat.sid == pid || descends_from(p, pid);
  }

  // The gone PIDs of `gone` that forked a member of `grp` (the daemon saw it) or that a member
  // still descends from: whose open file the group's is, on the kernel's word.
  std::vector<pid_t> lineage(const Group& grp, const std::vector<pid_t>& gone) const {
    std::vector<pid_t> out;
    for (pid_t pid : gone)
      for (const auto* m : grp.members)
        if (seen_inheriting(*m, pid) || (descends_from(*m, pid) && kin_of(*m, pid))) {
          out.push_back(pid);
          break;
        }
    return out;
  }

  // A live listed process whose job `p` belongs to (guessed groups only).
  std::optional<pid_t> job_of(const HostProcess& p, const std::vector<pid_t>& candidates) const {
    for (pid_t c : candidates) {
      const HostProcess* owner = find(c);
      if (!owner || c == p.stat.pid) continue;
      if (descends_from(p, c) || (owner->stat.pgid > 1 && owner->stat.pgid == p.stat.pgid))
        return c;
    }
    return std::nullopt;
  }

  std::vector<Group> groups_on(const Gpu& g) const {
    std::map<std::string, Group> exact;
    std::vector<Group> out;
    for (const auto& p : proc_.processes) {
      if (!p.is_live()) continue;
      bool guessed = false;
      for (const auto& h : p.devices) {
        // A display driver's node keeps none of the contexts the driver lists: its holder uses
        // the GPU, but keeps no gone PID's memory and shares no listed process's context.
        if (!h.may_keep_context(g)) continue;
        if (!h.open_file) {
          guessed = true;
          continue;
        }
        auto& grp = exact[*h.open_file];
        grp.id = h.open_file;
        if (grp.members.empty() || grp.members.back() != &p) grp.members.push_back(&p);
      }
      if (guessed) out.push_back({{&p}, std::nullopt});
    }
    for (auto& [id, grp] : exact) out.push_back(std::move(grp));
    return out;
  }

  void gpu(const Gpu& g, std::map<pid_t, Ghost>& ghosts) {
    std::vector<pid_t> owners_here, gone_here;
    for (const auto& p : g.processes) {
      // A zombie holds no file any more: like a PID gone from /proc, only others keep its
      // context; so does a number another process has now. An absent PID seen from a child
      // namespace is the host's, not a ghost (and so is one that names another process here).
      const HostProcess* there = find(p.pid);
      if (owned(p.pid))
        add_unique(owners_here, p.pid);
      else if (!proc_.in_child_pid_namespace || (there && !there->is_live()))
        add_unique(gone_here, p.pid);
    }
    std::vector<pid_t> all_listed_live;
    for (const auto& [pid, gpus] : listed_) all_listed_live.push_back(pid);

    std::vector<const Group*> unowned;
    auto groups = groups_on(g);
    for (const auto& grp : groups) {
      std::optional<pid_t> owner;
      for (const auto* m : grp.members)
        if (listed_on(m->stat.pid, g.index)) {
          owner = m->stat.pid;
          break;
        }
      if (!owner && !grp.id) owner = job_of(*grp.members.front(), owners_here);
      if (owner) {
        for (const auto* m : grp.members)
          if (m->stat.pid != *owner && !listed_on(m->stat.pid, g.index))
            add_unique(out_.shares_context_of[m->stat.pid], *owner);
        continue;
      }
      if (own_visible_file(grp, gone_here, all_listed_live)) continue;
      unowned.push_back(&grp);
    }

    std::vector<std::vector<pid_t>> lineages;  // by unowned group: the gone PIDs it came from
    for (const auto* grp : unowned) lineages.push_back(lineage(*grp, gone_here));
    // A group with a process that has a listed number it is not vouched for keeps nothing: the
    // listing may be its own context, whose holders are no gone PID's leftovers, and the
    // newcomer is never planned (core/listed_identity.h). Its members are only other holders.
    std::vector<bool> with_newcomer;
    for (const auto* grp : unowned)
      with_newcomer.push_back(std::any_of(
          grp->members.begin(), grp->members.end(),
          [&](const HostProcess* m) { return identities_.reused(m->stat.pid) != nullptr; }));
    for (pid_t pid : gone_here) {
      auto [slot, fresh] = ghosts.try_emplace(pid);
      auto& ghost = slot->second;
      if (fresh) {
        ghost.pid = pid;
        ghost.exact = !proc_.open_files_unknown;
      }
      add_gpu(ghost, g);
      // A client of a live server here: its context is the server's, which no inherited
      // file keeps and no holder here can free.
      if (auto servers = servers_of(g, pid); !servers.empty()) {
        for (pid_t s : servers) add_unique(ghost.servers, s);
        continue;
      }
      // Only a group with a kin member keeps it: every member shares that member's open file.
      // A group whose members a gone PID here forked keeps that PID's context alone: sharing
      // another gone PID's group or session number does not make it that PID's too.
      std::vector<const Group*> keeping;
      for (size_t i = 0; i < unowned.size(); ++i) {
        const auto& members = unowned[i]->members;
        const bool kept =
            !with_newcomer[i] &&
            (!lineages[i].empty()
                 ? std::find(lineages[i].begin(), lineages[i].end(), pid) != lineages[i].end()
                 : std::any_of(members.begin(), members.end(),
                               [&](const HostProcess* m) { return kin_of(*m, pid); }));
        if (kept) keeping.push_back(unowned[i]);
      }
      for (const auto* grp : keeping) {
        ghost.exact = ghost.exact && grp->id.has_value();
        for (const auto* m : grp->members) add_unique(ghost.keepers, m->stat.pid);
        if (grp->id) add_unique_text(ghost.open_files, *grp->id);
      }
      // A group another gone PID here forked is that PID's keeper, not a doubt about this one.
      for (size_t i = 0; i < unowned.size(); ++i)
        if ((lineages[i].empty() || with_newcomer[i]) &&
            std::find(keeping.begin(), keeping.end(), unowned[i]) == keeping.end())
          for (const auto* m : unowned[i]->members)
            if (std::find(ghost.keepers.begin(), ghost.keepers.end(), m->stat.pid) ==
                ghost.keepers.end())
              add_unique(ghost.other_holders, m->stat.pid);
      for (pid_t owner : owners_here)
        if (const HostProcess* p = find(owner); p && kin_of(*p, pid) && !serves_clients(g, owner))
          add_unique(ghost.listed_keepers, owner);
    }
  }

  // A group whose member the driver lists on another GPU, and that is no kin of a gone PID
  // here, is a file that process opened itself; so is, when open files are guessed, one of a
  // process that belongs to the job of such a listed process.
  bool own_visible_file(const Group& grp, const std::vector<pid_t>& gone_here,
                        const std::vector<pid_t>& listed_live) const {
    for (const auto* m : grp.members) {
      bool kin_of_gone = std::any_of(gone_here.begin(), gone_here.end(),
                                     [&](pid_t pid) { return kin_of(*m, pid); });
      if (kin_of_gone) continue;
      if (listed_anywhere(m->stat.pid)) return true;
      if (!grp.id && job_of(*m, listed_live)) return true;
    }
    return false;
  }

  static bool serves_clients(const Gpu& g, pid_t pid) {
    return std::any_of(g.processes.begin(), g.processes.end(),
                       [&](const DriverProcess& p) { return p.pid == pid && p.serves_clients; });
  }

  // The live servers on `g` that run a gone client's work: `pid` is listed there as a client
  // (kind ServerClient), and its server named, else every live server listed there.
  std::vector<pid_t> servers_of(const Gpu& g, pid_t pid) const {
    std::vector<pid_t> out;
    const DriverProcess* client = nullptr;
    for (const auto& p : g.processes)
      if (p.pid == pid && p.kind == GpuProcessKind::ServerClient) client = &p;
    if (!client) return out;
    if (client->server && owned(*client->server) && serves_clients(g, *client->server))
      return {*client->server};
    for (const auto& p : g.processes)
      if (p.serves_clients && owned(p.pid)) add_unique(out, p.pid);
    return out;
  }

  static void add_gpu(Ghost& ghost, const Gpu& g) {
    if (std::find(ghost.gpus.begin(), ghost.gpus.end(), g.index) != ghost.gpus.end()) return;
    ghost.gpus.push_back(g.index);
    std::optional<uint64_t> bytes;  // listed twice on one GPU (compute and graphics): once
    for (const auto& p : g.processes)
      if (p.pid == ghost.pid && p.used_bytes && (!bytes || *p.used_bytes > *bytes))
        bytes = p.used_bytes;
    ghost.bytes += bytes.value_or(0);
  }

  static void add_unique_text(std::vector<std::string>& v, const std::string& s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  }

  const ProcView& proc_;
  const DriverReading& drivers_;
  const ListedIdentities& identities_;
  std::map<pid_t, std::set<unsigned>> listed_;  // listed PIDs whose process lives, by GPU
  GhostVerdict out_;
};

}  // namespace

GhostVerdict decide_ghosts(const ProcView& proc, const DriverReading& drivers,
                           const ListedIdentities& identities) {
  return Decider(proc, drivers, identities).run();
}

}  // namespace gpureap::core
