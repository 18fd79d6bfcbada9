#include "policy/matcher.h"

#include <fnmatch.h>

#include <algorithm>

#include "core/duration.h"
#include "core/gpu_place.h"
#include "reap/kin.h"
#include "text/byte_format.h"

namespace gpureap::policy {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

bool glob(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

std::string basename(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string joined(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

const core::ProcessDetails* details(const core::ProcessRow& row) {
  return row.process && row.process->details ? &*row.process->details : nullptr;
}

// Gone PIDs' listings by the live processes that keep them alive.
using Kept = std::map<pid_t, std::vector<const core::GpuUse*>>;

Kept kept_listings(const core::Snapshot& s) {
  Kept kept;
  if (std::all_of(s.rows.begin(), s.rows.end(),
                  [](const core::ProcessRow& r) { return r.process.has_value(); }))
    return kept;  // no gone PID: the usual case, without building the process tree
  reap::Kin kin(s);
  for (const auto& row : s.rows) {
    if (row.process || !row.listed_by_driver) continue;
    for (pid_t keeper : kin.keepers(row.pid))
      for (const auto& use : row.gpus) kept[keeper].push_back(&use);
  }
  return kept;
}

// The row's memory on `gpus`: listed for it, or kept alive by it. Empty when part of it is
// unknown, or when it has none of either.
void add_memory(Evaluation& e, const core::ProcessRow& row, const Kept& kept) {
  std::vector<const core::GpuUse*> uses;
  for (const auto& use : row.gpus) uses.push_back(&use);
  if (auto k = kept.find(row.pid); k != kept.end())
    uses.insert(uses.end(), k->second.begin(), k->second.end());
  bool unknown = false, any = false;
  for (const auto* use : uses) {
    if (std::find(e.gpus.begin(), e.gpus.end(), use->index) == e.gpus.end()) continue;
    any = true;
    if (use->used_bytes)
      e.memory_by_gpu[use->index] += *use->used_bytes;
    else
      unknown = true;  // part unknown: the sum is unknown
  }
  if (unknown || (!any && !row.listed_by_driver)) return;
  uint64_t sum = 0;
  for (const auto& [gpu, bytes] : e.memory_by_gpu) sum += bytes;
  e.memory_bytes = sum;
}

Check check_user(const Policy& p, const core::ProcessRow& row) {
  const auto* d = details(row);
  if (p.user) {
    if (!d || !d->user) return {"user", Verdict::Fail, "user unknown (wanted " + *p.user + ")"};
    // A uid the passwd database has no name for is shown by its number: that is no login name,
    // and a policy naming a user never matches it (`uid` does).
    if (d->uid && *d->user == std::to_string(*d->uid))
      return {"user", Verdict::Fail,
              "uid " + *d->user + " has no login name (wanted " + *p.user + ")"};
    bool ok = *d->user == *p.user;
    return {"user", ok ? Verdict::Pass : Verdict::Fail,
            "user " + *d->user + (ok ? "" : " (wanted " + *p.user + ")")};
  }
  std::string want = std::to_string(*p.uid);
  if (!d || !d->uid) return {"uid", Verdict::Fail, "uid unknown (wanted " + want + ")"};
  bool ok = *d->uid == *p.uid;
  return {"uid", ok ? Verdict::Pass : Verdict::Fail,
          "uid " + std::to_string(*d->uid) + (ok ? "" : " (wanted " + want + ")")};
}

Check check_command(const Policy& p, const core::ProcessRow& row) {
  // A gone PID ran what nobody can tell now: the driver names a PID by whichever process has
  // the number when asked (a driver reads /proc for it), so another user who takes the number
  // names it, and its keepers would be ended for that name. Its keepers match by their own.
  if (!row.process)
    return {"command", Verdict::Fail,
            "command unknown: PID " + std::to_string(row.pid) +
                " is gone, and the driver's name for it is whatever process has its number"};
  std::vector<std::string> names{row.process->stat.comm};
  if (const auto* d = details(row); d && !d->cmdline.empty()) {
    names.push_back(d->cmdline.front());
    names.push_back(basename(d->cmdline.front()));
    names.push_back(joined(d->cmdline));
  }
  for (const auto& n : names)
    if (glob(*p.command, n))
      return {"command", Verdict::Pass, "command " + n + " matches " + *p.command};
  return {"command", Verdict::Fail,
          (names.empty() ? std::string("command unknown") : "command " + names.front()) +
              " does not match " + *p.command};
}

Check check_container(const Policy& p, const core::ProcessRow& row) {
  const auto* d = details(row);
  if (!d || !d->container) return {"container", Verdict::Fail, "not in a container"};
  // A claim its cgroup's name makes, unverified, is anyone's to make: it never matches.
  if (!d->container->verified)
    return {"container", Verdict::Fail,
            d->container->display_name() +
                (d->container->verification.empty() ? "" : ": " + d->container->verification)};
  const auto& c = *d->container;
  std::vector<std::string> names{c.runtime};
  if (c.id) names.push_back(*c.id), names.push_back(c.id->substr(0, 12));
  if (c.pod_uid) names.push_back(*c.pod_uid);
  // The names its runtime gives: "trainer", and for a pod "bert-0" and "research/bert-0".
  if (c.name) names.push_back(*c.name);
  if (c.pod_name) names.push_back(*c.pod_name), names.push_back(c.display_name());
  for (const auto& n : names)
    if (glob(*p.container, n))
      return {"container", Verdict::Pass, "container " + c.display_name() + " matches " + n};
  return {"container", Verdict::Fail,
          "container " + c.display_name() + " does not match " + *p.container};
}

Check check_anomalies(const Policy& p, const core::ProcessRow& row) {
  for (auto a : p.anomalies)
    if (row.has(a)) return {"anomalies", Verdict::Pass, std::string(core::to_string(a))};
  std::string has;
  for (auto a : row.anomalies) has += (has.empty() ? "" : ", ") + std::string(core::to_string(a));
  return {"anomalies", Verdict::Fail, has.empty() ? "no anomaly" : "only " + has};
}

Check check_idle(const Policy& p, const core::ProcessRow& row, const std::vector<unsigned>& gpus,
                 const MatchContext& ctx) {
  const auto want = *p.idle;
  const std::string below = "SM < " + std::to_string(p.idle_below) + "%";
  if (gpus.empty()) return {"idle", Verdict::Fail, "uses no GPU the policy looks at"};
  std::optional<milliseconds> shortest;
  for (unsigned g : gpus) {
    if (!ctx.idle_since) {
      // One snapshot: the current utilisation tells "not idle", never "idle for long enough".
      auto use = std::find_if(row.gpus.begin(), row.gpus.end(),
                              [&](const core::GpuUse& u) { return u.index == g; });
      if (use == row.gpus.end() || !use->sm_utilization_percent)
        return {"idle", Verdict::Fail, "SM utilisation on GPU " + std::to_string(g) + " unknown"};
      if (*use->sm_utilization_percent >= p.idle_below)
        return {
            "idle", Verdict::Fail,
            "SM " + std::to_string(*use->sm_utilization_percent) + "% on GPU " + std::to_string(g)};
      continue;
    }
    auto since = ctx.idle_since(row, g, p.idle_below);
    if (!since)
      return {"idle", Verdict::Fail,
              "not idle (" + below + ") on GPU " + std::to_string(g) + " now"};
    auto held = duration_cast<milliseconds>(ctx.now - *since);
    shortest = shortest ? std::min(*shortest, held) : held;
  }
  if (!ctx.idle_since)
    return {"idle", Verdict::Unknown,
            below + " now; the daemon's history decides whether it lasted " +
                core::format_duration(want)};
  bool ok = *shortest >= want;
  return {"idle", ok ? Verdict::Pass : Verdict::Fail,
          "idle (" + below + ") for " + core::format_duration(*shortest) +
              (ok ? "" : " of " + core::format_duration(want))};
}

Check check_runtime(const Policy& p, const core::ProcessRow& row, const MatchContext& ctx) {
  auto start = row.process ? ctx.snapshot.start_time(row.process->stat) : std::nullopt;
  if (!start) return {"runtime", Verdict::Fail, "start time unknown"};
  auto age = duration_cast<milliseconds>(ctx.now - *start);
  bool ok = age >= *p.runtime;
  return {"runtime", ok ? Verdict::Pass : Verdict::Fail,
          "running for " + core::format_duration(age) +
              (ok ? "" : " (less than " + core::format_duration(*p.runtime) + ")")};
}

}  // namespace

bool Evaluation::matched() const {
  return !exempt && std::all_of(checks.begin(), checks.end(),
                                [](const Check& c) { return c.verdict == Verdict::Pass; });
}

bool Evaluation::possible() const {
  return !exempt && std::none_of(checks.begin(), checks.end(),
                                 [](const Check& c) { return c.verdict == Verdict::Fail; });
}

std::vector<std::string> Evaluation::reasons() const {
  std::vector<std::string> out;
  for (const auto& c : checks)
    if (c.verdict == Verdict::Pass) out.push_back(c.detail);
  return out;
}

const Check* Evaluation::failed() const {
  for (const auto& c : checks)
    if (c.verdict == Verdict::Fail) return &c;
  return nullptr;
}

std::vector<Evaluation> evaluate(const Policy& p, const MatchContext& ctx) {
  std::vector<Evaluation> out;
  const Kept kept = kept_listings(ctx.snapshot);
  for (const auto& row : ctx.snapshot.rows) {
    Evaluation e;
    e.pid = row.pid;
    if (row.process) e.start_ticks = row.process->stat.start_ticks;
    e.gpus = core::gpus_of(ctx.snapshot, row);
    if (p.gpu) {
      bool on = std::find(e.gpus.begin(), e.gpus.end(), *p.gpu) != e.gpus.end();
      e.checks.push_back(
          {"gpu", on ? Verdict::Pass : Verdict::Fail,
           on ? "on GPU " + std::to_string(*p.gpu) : "not on GPU " + std::to_string(*p.gpu)});
      e.gpus = on ? std::vector<unsigned>{*p.gpu} : std::vector<unsigned>{};
    }
    add_memory(e, row, kept);
    if (p.user || p.uid) e.checks.push_back(check_user(p, row));
    if (p.command) e.checks.push_back(check_command(p, row));
    if (p.container) e.checks.push_back(check_container(p, row));
    if (!p.anomalies.empty()) e.checks.push_back(check_anomalies(p, row));
    if (p.min_memory) {
      const std::string want = text::human_bytes(*p.min_memory);
      if (!e.memory_bytes)
        e.checks.push_back(
            {"min_memory", Verdict::Fail, "memory unknown (wanted >= " + want + ")"});
      else
        e.checks.push_back(
            {"min_memory", *e.memory_bytes >= *p.min_memory ? Verdict::Pass : Verdict::Fail,
             "uses " + text::human_bytes(*e.memory_bytes) +
                 (*e.memory_bytes >= *p.min_memory ? " (>= " : " (< ") + want + ")"});
    }
    if (p.idle) e.checks.push_back(check_idle(p, row, e.gpus, ctx));
    if (p.runtime) e.checks.push_back(check_runtime(p, row, ctx));
    if (ctx.exemption) e.exempt = ctx.exemption(row);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace gpureap::policy
