#include "reap/outcome.h"

#include <algorithm>

#include "text/escape.h"
#include "text/time_format.h"

namespace gpureap::reap {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using SteadyTime = std::chrono::steady_clock::time_point;

long long ms_between(SteadyTime from, SteadyTime to) {
  return std::max<long long>(0, duration_cast<milliseconds>(to - from).count());
}

class Composer {
 public:
  Composer(const Plan& p, const std::vector<Execution>& e, const Verification& v)
      : plan_(p), execs_(e), v_(v) {}

  Report run() {
    for (size_t i = 0; i < plan_.targets.size(); ++i)
      r_.outcomes.push_back(outcome(plan_.targets[i], execs_[i]));
    for (const auto& g : plan_.gone) r_.gone.push_back(gone(g));
    freed();
    r_.polls = v_.polls;
    for (const auto& e : execs_)
      if (e.exited_at && (!r_.timing.last_exit || *e.exited_at > *r_.timing.last_exit))
        r_.timing.last_exit = e.exited_at;
    r_.exit_code = exit_code();
    return std::move(r_);
  }

 private:
  // The steady time a listing's release is measured from: when the process that held it
  // exited (for a gone PID: its last keeper).
  std::optional<SteadyTime> exit_of(pid_t pid) const {
    for (size_t i = 0; i < plan_.targets.size(); ++i)
      if (plan_.targets[i].pid == pid) return execs_[i].exited_steady;
    return std::nullopt;
  }

  std::optional<SteadyTime> last_keeper_exit(const GoneListing& g) const {
    std::optional<SteadyTime> last;
    for (pid_t k : g.keepers) {
      auto t = exit_of(k);
      if (t && (!last || *t > *last)) last = t;
    }
    return last;
  }

  Outcome outcome(const Target& t, const Execution& e) {
    Outcome o;
    o.pid = t.pid;
    o.signals = e.signals;
    o.exited_after = e.exited_after;
    o.exited_at = e.exited_at;
    switch (t.action) {
      case Action::Refused:
        o.kind = OutcomeKind::Refused;
        o.why = t.refusal;
        return o;
      case Action::NotPermitted:
        o.kind = OutcomeKind::NotPermitted;
        o.why = t.refusal;
        return o;
      case Action::Zombie:
        return zombie(t, o);
      case Action::Signal:
        break;
    }
    switch (e.status) {
      case ExecStatus::NotPermitted:
        o.kind = OutcomeKind::NotPermitted;
        o.why = e.why;
        return o;
      case ExecStatus::Survived:
      case ExecStatus::NotAttempted:
        o.kind = OutcomeKind::Survived;
        o.why = e.why;
        o.wchan = e.wchan;
        return o;
      case ExecStatus::Exited:
      case ExecStatus::Recycled:
        break;
    }
    return released_or_held(t, e, o);
  }

  Outcome zombie(const Target& t, Outcome o) {
    if (std::count(v_.reaped_zombies.begin(), v_.reaped_zombies.end(), t.pid)) {
      o.kind = OutcomeKind::Released;
      o.released_bytes = 0;
      o.why = "a zombie; reaped once its parent exited";
      return o;
    }
    o.kind = OutcomeKind::Survived;
    o.parent = t.parent;
    std::string parent = std::to_string(t.parent.pid) +
                         (t.parent.comm ? " (" + text::terminal_safe(*t.parent.comm) + ")" : "");
    o.why = "a zombie: it has exited and holds nothing, but its parent " + parent +
            " has not reaped it; signal or fix the parent (gpureap kill " +
            std::to_string(t.parent.pid) + ")";
    return o;
  }

  Outcome released_or_held(const Target& t, const Execution& e, Outcome o) {
    if (e.status == ExecStatus::Recycled) o.why = e.why;
    std::vector<const ListingRelease*> mine;
    for (const auto& u : t.gpus)
      if (const auto* l = v_.listing(t.pid, u.index)) mine.push_back(l);
    for (pid_t kept : t.keeps)
      for (const auto& l : v_.listings)
        if (l.pid == kept) mine.push_back(&l);
    bool all_released = std::all_of(mine.begin(), mine.end(), [](auto* l) { return l->released; });
    bool still_holding = std::count(v_.still_holding.begin(), v_.still_holding.end(), t.pid) > 0;
    if (all_released && !still_holding) {
      o.kind = OutcomeKind::Released;
      if (plan_.backend_available) {
        uint64_t bytes = 0;
        for (const auto* l : mine)
          if (l->pid == t.pid && l->bytes) bytes += *l->bytes;
        o.released_bytes = bytes;
      }
      long long ms = 0;
      for (const auto* l : mine)
        if (l->released_at && e.exited_steady)
          ms = std::max(ms, ms_between(*e.exited_steady, *l->released_at));
      if (e.exited_steady)
        o.release_ms = mine.empty() ? ms_between(*e.exited_steady, v_.finished) : ms;
      return o;
    }
    o.kind = OutcomeKind::StillHeld;
    o.why = held_why(t, mine, still_holding);
    for (const auto* l : mine)
      for (const auto& h : l->held_by)
        if (std::none_of(o.held_by.begin(), o.held_by.end(),
                         [&](const Holder& x) { return x.pid == h.pid; }))
          o.held_by.push_back(h);
    return o;
  }

  std::string held_why(const Target& t, const std::vector<const ListingRelease*>& mine,
                       bool holding) {
    if (holding) return "it exited, yet a later scan still shows it holding a GPU device file";
    for (const auto* l : mine) {
      if (l->released) continue;
      std::string whose = l->pid == t.pid ? "its memory on GPU " + std::to_string(l->gpu)
                                          : "gone PID " + std::to_string(l->pid) +
                                                "'s memory on GPU " + std::to_string(l->gpu);
      if (l->unreadable)
        return whose +
               " could not be checked: the driver's process list could not be read "
               "(see `gpureap ps`)";
      if (l->left_list)
        return whose +
               " left the driver's list, but the GPU's used memory did not drop: the "
               "driver is still tearing it down or leaked it; check again later";
      if (!l->held_by.empty())
        return whose + " is still listed and kept alive by " + holders_text(l->held_by) +
               ": kill those too (--tree or --group)";
      return whose +
             " is still listed, and no process holds the GPU's device files: a "
             "leaked context; only a GPU reset (gpureap doctor names the command) or a reboot "
             "frees it";
    }
    return "memory still held";
  }

  GoneOutcome gone(const GoneListing& g) {
    GoneOutcome o;
    o.pid = g.pid;
    o.bytes = g.memory_bytes();
    bool any = false, all = true;
    std::optional<std::chrono::steady_clock::time_point> released_at;
    for (const auto& l : v_.listings) {
      if (l.pid != g.pid) continue;
      any = true;
      all = all && l.released;
      if (l.released_at && (!released_at || *l.released_at > *released_at))
        released_at = l.released_at;
      for (const auto& h : l.held_by) o.held_by.push_back(h);
    }
    o.attempted = any;
    o.released = any && all;
    auto from = last_keeper_exit(g);
    if (o.released && released_at && from) o.release_ms = ms_between(*from, *released_at);
    return o;
  }

  void freed() {
    for (const auto& base : plan_.gpus) {
      GpuFreed f{base.index, 0, base.used_bytes};
      for (const auto& g : v_.gpus)
        if (g.index == base.index) f.used_after = g.used_after;
      for (const auto& l : v_.listings)
        if (l.gpu == base.index && l.released && l.bytes) {
          f.bytes += *l.bytes;
          f.known = true;
        }
      r_.freed.push_back(f);
    }
  }

  int exit_code() const {
    int planned = plan_exit_code(plan_);
    if (planned != kExitReleased) return planned;
    bool released = false, failed = false, denied = false;
    for (const auto& o : r_.outcomes) {
      released = released || o.kind == OutcomeKind::Released;
      failed = failed || o.kind == OutcomeKind::StillHeld || o.kind == OutcomeKind::Survived;
      denied = denied || o.kind == OutcomeKind::NotPermitted;
    }
    if (failed) return kExitHeld;
    if (denied) return released ? kExitHeld : kExitEnvironment;
    return kExitReleased;
  }

  const Plan& plan_;
  const std::vector<Execution>& execs_;
  const Verification& v_;
  Report r_;
};

}  // namespace

Report compose(const Plan& plan, const std::vector<Execution>& executions,
               const Verification& verification) {
  return Composer(plan, executions, verification).run();
}

std::optional<uint64_t> freed_bytes(const Report& report) {
  std::optional<uint64_t> sum;
  for (const auto& f : report.freed)
    if (f.known) sum = sum.value_or(0) + f.bytes;
  return sum;
}

int plan_exit_code(const Plan& plan) {
  if (plan.nothing_matched()) return kExitNoMatch;
  if (plan.count(Action::Signal) + plan.count(Action::Zombie) > 0) return kExitReleased;
  // Everything that matched is off limits: permission is an environment error; a protected
  // or never-signalled process means nothing killable matched.
  return plan.count(Action::NotPermitted) > 0 ? kExitEnvironment : kExitNoMatch;
}

std::string_view to_string(OutcomeKind kind) {
  switch (kind) {
    case OutcomeKind::Released:
      return "released";
    case OutcomeKind::StillHeld:
      return "still-held";
    case OutcomeKind::Survived:
      return "survived";
    case OutcomeKind::NotPermitted:
      return "not-permitted";
    case OutcomeKind::Refused:
      return "refused";
  }
  return "";  // no enumerator: no name
}

std::string holders_text(const std::vector<Holder>& held) {
  std::string s;
  for (const auto& h : held)
    s += (s.empty() ? "" : ", ") + std::to_string(h.pid) +
         (h.comm ? " (" + text::terminal_safe(*h.comm) + ")" : "");
  return s;
}

std::chrono::milliseconds reclaim_time(const Timing& t) {
  auto from = t.signalled.value_or(t.started);
  auto to = t.verified.value_or(t.report);
  if (to < from) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from);
}

}  // namespace gpureap::reap
