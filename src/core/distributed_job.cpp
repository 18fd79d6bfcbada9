#include "core/distributed_job.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/wait_status.h"

namespace gpureap::core {
namespace {

std::optional<uid_t> uid_of(const HostProcess& p) {
  return p.details ? p.details->uid : std::nullopt;
}

const RankLabels* labels_of(const HostProcess& p) {
  return p.details && p.details->rank_labels ? &*p.details->rank_labels : nullptr;
}

// A holder under an ancestor that holds a GPU file is that process's worker (a DataLoader
// worker inherits its trainer's files): the ancestor is the rank.
bool under_gpu_holder(const ProcView& view, const HostProcess& p) {
  pid_t up = p.stat.ppid;
  for (int depth = 0; depth < 256 && up > 1; ++depth) {
    const HostProcess* a = view.find(up);
    if (!a) return false;
    if (a->is_live() && a->holds_gpu_file()) return true;
    up = a->stat.ppid;
  }
  return false;
}

// Whether `child` belongs to the job `launcher` runs: the kernel's facts only.
bool belongs(const HostProcess& launcher, const HostProcess& child) {
  auto lu = uid_of(launcher), cu = uid_of(child);
  return launcher.stat.pid > 1 && launcher.is_live() && child.is_live() && lu && cu && *lu == *cu &&
         launcher.stat.start_ticks <= child.stat.start_ticks &&
         launcher.stat.pgid == child.stat.pgid && !launcher.stat.is_kernel_thread();
}

std::string base_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string launcher_kind(const HostProcess& launcher,
                          const std::vector<const HostProcess*>& ranks) {
  static const std::vector<std::pair<std::string, std::string>> kWords = {
      {"torch.distributed.run", "torchrun"},
      {"torchrun", "torchrun"},
      {"torch.distributed.launch", "torchrun"},
      {"deepspeed", "deepspeed"},
      {"accelerate", "accelerate"},
      {"mpirun", "mpirun"},
      {"mpiexec", "mpirun"},
      {"orterun", "mpirun"},
      {"prterun", "mpirun"},
      {"slurmstepd", "srun"}};
  const auto& argv = launcher.details ? launcher.details->cmdline : std::vector<std::string>{};
  for (size_t i = 0; i < argv.size() && i < 4; ++i)
    for (const auto& [word, kind] : kWords)
      if (base_name(argv[i]) == word) return kind;
  for (const HostProcess* r : ranks)
    if (r->details) {
      const auto& a = r->details->cmdline;
      if (std::find(a.begin(), a.end(), "--multiprocessing-fork") != a.end()) return "mp.spawn";
    }
  return launcher.stat.comm;
}

// The live descendants run by `uid`: a job never answers for another user's process, even one
// its launcher started (a setuid program).
void add_descendants(const std::multimap<pid_t, const HostProcess*>& children, pid_t root,
                     std::optional<uid_t> uid, std::vector<pid_t>& out, int depth = 0) {
  if (depth > 256) return;
  auto [lo, hi] = children.equal_range(root);
  for (auto it = lo; it != hi; ++it) {
    const HostProcess& c = *it->second;
    if (!c.is_live() || !uid || uid_of(c) != uid) continue;
    out.push_back(c.stat.pid);
    add_descendants(children, c.stat.pid, uid, out, depth + 1);
  }
}

// A zombie child of `launcher` that is the kernel's word that a process of its job failed: its
// wait status, which the kernel keeps for the launcher until it reaps it, says it was killed by
// a signal or exited nonzero (the kernel shows 0 to a reader that may not trace it: that reads
// as no failure), and it ran as the launcher's user (its uid known, not guessed) in the
// launcher's process group, as the job's ranks do. A helper that exited 0 is no failure.
bool failed_in_job(const HostProcess& launcher, const HostProcess& zombie) {
  const auto lu = uid_of(launcher), zu = uid_of(zombie);
  return zombie.stat.is_zombie() && zombie.stat.wait_status &&
         abnormal_end(*zombie.stat.wait_status) && lu && zu && *lu == *zu &&
         zombie.stat.pgid == launcher.stat.pgid && could_be_parent(launcher.stat, zombie.stat);
}

// A zombie is a rank's end only on the kernel's word that it was a rank, and a rank whose number
// no live rank has is known to have ended only so. What /proc keeps of a zombie (PID, start
// time, uid, group, exit status) is what a helper the launcher ran and has not reaped has too
// (nvidia-smi, a short subprocess, a process reparented to a launcher that is a container's
// init), and its environment and files, which made it a rank, are gone. So a zombie counts only
// where a view taken while it lived showed it a rank of this launcher's life, by PID and start
// time: the daemon's records (engine/rank_exits: the ranks it watched and saw end) or
// `earlier`. A rank's number is its LOCAL_RANK label as that view read it; a process without
// one (a helper that opened the GPU, as nvidia-smi does) ends no numbered rank. How a zombie
// ended is another word (failed_in_job): that a process of the job failed, not which rank.
class RankEnds {
 public:
  RankEnds(const ProcView& view, const ProcView* earlier) : view_(view) {
    if (earlier)
      for (auto& j : distributed_jobs(*earlier))
        for (const auto& r : j.ranks)
          if (const HostProcess* p = earlier->find(r.pid))
            seen_[{j.launcher, j.launcher_start_ticks}].push_back(
                {r.pid, p->stat.start_ticks, r.local_rank});
  }

  // Sorts `job`'s zombie children (`zombies`) of `launcher` into its ended ranks, its failed
  // processes and its doubts, and names the missing numbers whose rank ended.
  void sort(DistributedJob& job, const HostProcess& launcher,
            const std::vector<const HostProcess*>& zombies) const {
    const auto missing = [&](std::optional<unsigned> n) {
      return n && std::find(job.missing.begin(), job.missing.end(), *n) != job.missing.end();
    };
    const auto add = [&](unsigned n, pid_t pid, uint64_t start, bool between) {
      for (auto& e : job.ended)
        if (e.local_rank == n) {
          e.between_views = e.between_views || between;
          return;
        }
      job.ended.push_back({n, pid, start, between});
    };
    for (const auto& e : view_.rank_exits)
      if (e.launcher == job.launcher && e.launcher_start_ticks == job.launcher_start_ticks &&
          missing(e.local_rank))
        add(*e.local_rank, e.pid, e.start_ticks, false);
    const auto seen = seen_.find({job.launcher, job.launcher_start_ticks});
    for (const HostProcess* z : zombies) {
      const pid_t pid = z->stat.pid;
      const uint64_t start = z->stat.start_ticks;
      const bool recorded =
          std::any_of(view_.rank_exits.begin(), view_.rank_exits.end(), [&](const RankExit& e) {
            return e.launcher == job.launcher &&
                   e.launcher_start_ticks == job.launcher_start_ticks && e.pid == pid &&
                   e.start_ticks == start;
          });
      const SeenRank* before = nullptr;
      if (seen != seen_.end())
        for (const auto& r : seen->second)
          if (r.pid == pid && r.start_ticks == start) before = &r;
      const bool failed = failed_in_job(launcher, *z);
      if (failed) job.failed.push_back({pid, start, *z->stat.wait_status});
      if (recorded || before) {
        job.exited.push_back(pid);
        if (before && missing(before->local_rank)) add(*before->local_rank, pid, start, true);
      } else if (!failed && (!uid_of(*z) || uid_of(*z) == job.uid)) {
        // Not another user's (a setuid program's child); one whose uid could not be read is a
        // doubt too, and a doubt needs no more.
        job.unreaped.push_back(pid);
      }
    }
    std::sort(job.ended.begin(), job.ended.end(),
              [](const EndedRank& a, const EndedRank& b) { return a.local_rank < b.local_rank; });
  }

 private:
  struct SeenRank {
    pid_t pid = 0;
    uint64_t start_ticks = 0;
    std::optional<unsigned> local_rank;
  };
  const ProcView& view_;
  std::map<std::pair<pid_t, uint64_t>, std::vector<SeenRank>> seen_;  // by launcher's life
};

}  // namespace

const JobRank* DistributedJob::rank_with(unsigned local_rank) const {
  for (const auto& r : ranks)
    if (r.local_rank == local_rank) return &r;
  return nullptr;
}

const EndedRank* DistributedJob::ended_rank(unsigned local_rank) const {
  for (const auto& e : ended)
    if (e.local_rank == local_rank) return &e;
  return nullptr;
}

bool DistributedJob::stalled() const {
  return !elastic_agent && (!ended.empty() || !failed.empty()) && local_world_size &&
         !missing.empty() && missing.size() < *local_world_size;
}

std::string job_user(const ProcView& view, const DistributedJob& job) {
  const HostProcess* l = view.find(job.launcher);
  if (l && l->details && l->details->user) return *l->details->user;
  return job.uid ? "uid " + std::to_string(*job.uid) : "unknown";
}

std::vector<DistributedJob> distributed_jobs(const ProcView& view, const ProcView* earlier) {
  const RankEnds ends(view, earlier);
  std::multimap<pid_t, const HostProcess*> children;
  for (const auto& p : view.processes) children.emplace(p.stat.ppid, &p);

  std::set<pid_t> launchers;
  for (const auto& p : view.processes)
    if (p.is_live() && p.holds_gpu_file() && !under_gpu_holder(view, p)) {
      const HostProcess* l = view.find(p.stat.ppid);
      if (l && belongs(*l, p) && !l->holds_gpu_file()) launchers.insert(l->stat.pid);
    }

  std::vector<DistributedJob> out;
  for (pid_t lp : launchers) {
    const HostProcess& l = *view.find(lp);
    DistributedJob job;
    job.launcher = lp;
    job.launcher_start_ticks = l.stat.start_ticks;
    job.uid = uid_of(l);
    std::vector<const HostProcess*> ranks, zombies;
    auto [lo, hi] = children.equal_range(lp);
    for (auto it = lo; it != hi; ++it) {
      const HostProcess& c = *it->second;
      if (c.stat.is_zombie()) {
        if (could_be_parent(l.stat, c.stat)) zombies.push_back(&c);
        continue;
      }
      // A rank opens the GPU itself; a labelled child of the launcher is a rank that has not
      // (yet, or at all).
      if (!belongs(l, c) || !(c.holds_gpu_file() || labels_of(c))) continue;
      ranks.push_back(&c);
    }
    std::set<std::optional<unsigned>> sizes;
    bool several = false;
    for (const HostProcess* r : ranks) {
      const RankLabels* lab = labels_of(*r);
      job.ranks.push_back({r->stat.pid, lab ? lab->local_rank : std::nullopt, r->holds_gpu_file()});
      sizes.insert(lab ? lab->local_world_size : std::nullopt);
      if (lab && lab->local_world_size && *lab->local_world_size >= 2) several = true;
      if (lab && lab->run_id && !job.run_id) job.run_id = lab->run_id;
      if (lab && lab->max_restarts && lab->restart_count) {
        job.elastic_agent = true;
        job.restarts_left =
            *lab->max_restarts > *lab->restart_count ? *lab->max_restarts - *lab->restart_count : 0;
      }
    }
    if (job.ranks.size() < 2 && !several) continue;
    // A launcher numbers its ranks apart: children that share a LOCAL_RANK copied one label (a
    // trainer's DataLoader workers inherit its environment, and open the GPU themselves where
    // the trainer has not yet), so the labels count no rank.
    std::set<unsigned> numbers;
    bool repeated = false;
    for (const auto& r : job.ranks)
      if (r.local_rank && !numbers.insert(*r.local_rank).second) repeated = true;
    if (sizes.size() == 1 && *sizes.begin() && !repeated) {
      job.local_world_size = *sizes.begin();
      // A label's number is its owner's to write: only a plausible size is counted out.
      for (unsigned n = 0; n < *job.local_world_size && n < 4096; ++n)
        if (!job.rank_with(n)) job.missing.push_back(n);
    }
    ends.sort(job, l, zombies);
    job.kind = launcher_kind(l, ranks);
    job.members.push_back(lp);
    add_descendants(children, lp, job.uid, job.members);
    std::sort(job.members.begin(), job.members.end());
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace gpureap::core
