#include "reap/verifier.h"

#include <poll.h>

#include <algorithm>
#include <map>
#include <memory>

#include "reap/kin.h"

namespace gpureap::reap {
namespace {

using Clock = std::chrono::steady_clock;

// Memory the driver holds without listing anyone may wander by this much between two reads
// (contexts of other processes being created) without meaning the killed memory is stuck.
constexpr uint64_t kUnattributedSlack = 64ull << 20;
constexpr std::chrono::milliseconds kZombieWait{1'000};

bool gone_for_good(const Execution& e) {
  return e.status == ExecStatus::Exited || e.status == ExecStatus::Recycled;
}

// Whether the driver's list of this GPU could be read: a failed read is no evidence of release.
bool readable(const core::Snapshot& s, unsigned gpu) {
  const core::Gpu* g = s.gpu(gpu);
  if (!g || g->error || g->processes_error) return false;
  const core::BackendStatus* b = s.drivers.backend_of(*g);
  return b && b->available;
}

bool listed(const core::Snapshot& s, pid_t pid, unsigned gpu) {
  const core::ProcessRow* row = s.row(pid);
  if (!row || !row->listed_by_driver) return false;
  return std::any_of(row->gpus.begin(), row->gpus.end(),
                     [&](const core::GpuUse& u) { return u.index == gpu; });
}

class Verifier {
 public:
  Verifier(const Plan& plan, const std::vector<Execution>& execs) : plan_(plan) {
    for (size_t i = 0; i < plan.targets.size(); ++i) {
      const Target& t = plan.targets[i];
      if (t.action == Action::Zombie) zombies_.push_back(&t);
      if (!gone_for_good(execs[i])) continue;
      exited_[t.pid] = &t;
      for (const auto& u : t.gpus) want(t.pid, u, t.sharers_left);
    }
    // A gone PID's context goes only when every keeper in the plan is gone; with a survivor
    // left there is nothing to wait for.
    for (const auto& g : plan.gone) {
      if (g.keepers.empty()) continue;
      if (!std::all_of(g.keepers.begin(), g.keepers.end(),
                       [&](pid_t k) { return exited_.count(k); }))
        continue;
      for (const auto& u : g.gpus) want(g.pid, u);
    }
    v_.backend_available = plan.backend_available;
  }

  Verification run(const ReleaseSource& source, const VerifyOptions& o) {
    auto deadline = Clock::now() + o.wait_release;
    for (;;) {
      core::Snapshot s = source.driver();
      ++v_.polls;
      observe(s, source);
      if (done(source)) break;
      auto now = Clock::now();
      if (now >= deadline || (o.cancelled && o.cancelled())) {
        v_.timed_out = true;
        break;
      }
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
      ::poll(nullptr, 0, static_cast<int>(std::min(left, o.interval).count()));
    }
    finish(source);
    v_.finished = Clock::now();
    return std::move(v_);
  }

 private:
  void want(pid_t pid, const core::GpuUse& u, std::vector<pid_t> kept_by_plan = {}) {
    ListingRelease l{pid, u.index, u.used_bytes};
    l.kept_by_plan = std::move(kept_by_plan);
    v_.listings.push_back(l);
  }

  void observe(const core::Snapshot& s, const ReleaseSource& source) {
    auto now = Clock::now();
    for (auto& l : v_.listings) {
      l.unreadable = !readable(s, l.gpu);
      if (!l.unreadable) l.left_list = !listed(s, l.pid, l.gpu);
    }
    v_.gpus.clear();
    for (const auto& base : plan_.gpus) {
      GpuRelease g{base.index, base.used_bytes};
      for (const auto& l : v_.listings)
        if (l.gpu == base.index && l.left_list && l.bytes) g.expected_drop += *l.bytes;
      if (const core::Gpu* now_gpu = s.gpu(base.index)) {
        g.used_after = now_gpu->memory.used_bytes;
        auto unattributed = s.memory_summary(*now_gpu).unattributed_bytes;
        // What left the lists must leave the GPU: if it shows up as memory nobody is listed
        // for, the driver is still tearing the context down (or leaked it).
        if (base.unattributed_bytes && unattributed && g.expected_drop > 0)
          g.memory_back = *unattributed <= *base.unattributed_bytes +
                                               std::max(kUnattributedSlack, g.expected_drop / 4);
      }
      v_.gpus.push_back(g);
    }
    for (auto& l : v_.listings) {
      bool back = std::all_of(v_.gpus.begin(), v_.gpus.end(), [&](const GpuRelease& g) {
        return g.index != l.gpu || g.memory_back;
      });
      bool released = !l.unreadable && l.left_list && back;
      if (released && !l.released) l.released_at = now;
      l.released = released;
    }
    v_.still_holding.clear();
    for (const auto& [pid, target] : exited_)
      if (is_planned_alive(source, *target)) v_.still_holding.push_back(pid);
  }

  // The planned process itself, alive: what a pidfd already ruled out, checked in /proc.
  static bool is_planned_alive(const ReleaseSource& source, const Target& t) {
    auto st = source.stat(t.pid);
    return st && st->start_ticks == t.start_ticks && !st->is_zombie();
  }

  bool done(const ReleaseSource& source) const {
    return std::all_of(
               v_.listings.begin(), v_.listings.end(),
               [](const ListingRelease& l) { return l.released || !l.kept_by_plan.empty(); }) &&
           v_.still_holding.empty() && !awaiting_zombie(source);
  }

  bool zombie_present(const ReleaseSource& source, const Target& z) const {
    auto st = source.stat(z.pid);
    return st && st->start_ticks == z.start_ticks;
  }

  // A zombie whose parent we killed is reparented and reaped by init (or a subreaper) a
  // moment later; give that moment, but not the whole wait: a broken init never reaps.
  bool awaiting_zombie(const ReleaseSource& source) const {
    if (Clock::now() >= zombie_deadline_) return false;
    return std::any_of(zombies_.begin(), zombies_.end(), [&](const Target* z) {
      return exited_.count(z->parent.pid) && zombie_present(source, *z);
    });
  }

  void finish(const ReleaseSource& source) {
    for (const Target* z : zombies_)
      if (!zombie_present(source, *z)) v_.reaped_zombies.push_back(z->pid);
    bool held = std::any_of(v_.listings.begin(), v_.listings.end(),
                            [](const ListingRelease& l) { return !l.released; });
    if (!held) return;
    core::Snapshot s = source.full();
    Kin kin(s);
    for (auto& l : v_.listings) {
      if (l.released) continue;
      std::vector<pid_t> keep = kin.keepers(l.pid);
      for (pid_t k : l.kept_by_plan)
        if (const core::HostProcess* p = s.find(k);
            p && !p->stat.is_zombie() && std::find(keep.begin(), keep.end(), k) == keep.end())
          keep.push_back(k);
      // The PID is alive again, recycled by a GPU user that the kernel vouches for as the
      // listed process; a newcomer under the number (ProcessRow::reused) holds no part of it.
      const core::ProcessRow* row = s.row(l.pid);
      if (const core::HostProcess* p = s.find(l.pid);
          p && !p->stat.is_zombie() && !(row && row->reused))
        keep.insert(keep.begin(), l.pid);
      for (pid_t k : keep) {
        const core::HostProcess* p = s.find(k);
        l.held_by.push_back({k, p ? std::optional(p->stat.comm) : std::nullopt});
      }
    }
  }

  const Plan& plan_;
  Clock::time_point zombie_deadline_ = Clock::now() + kZombieWait;
  std::map<pid_t, const Target*> exited_;
  std::vector<const Target*> zombies_;
  Verification v_;
};

}  // namespace

const ListingRelease* Verification::listing(pid_t pid, unsigned gpu) const {
  for (const auto& l : listings)
    if (l.pid == pid && l.gpu == gpu) return &l;
  return nullptr;
}

Verification verify(const Plan& plan, const std::vector<Execution>& executions,
                    const ReleaseSource& source, const VerifyOptions& options) {
  return Verifier(plan, executions).run(source, options);
}

core::Snapshot driver_snapshot(core::DriverReading drivers) {
  return core::join(core::ProcView{}, std::move(drivers), "", std::chrono::system_clock::now());
}

ReleaseSource release_source(const World& world) {
  ReleaseSource source;
  source.driver = [&world] { return world.driver_view(); };
  source.full = [&world] { return world.collect(); };
  source.stat = [&world](pid_t pid) -> std::optional<core::ProcessStat> {
    auto st = world.stat(pid);
    return st.ok() ? *st : std::nullopt;
  };
  return source;
}

}  // namespace gpureap::reap
