#include "engine/scheduled_collector.h"

#include <set>

#include "base/hostname.h"
#include "engine/held_states.h"

namespace gpureap::engine {
namespace {

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The numbers whose past lives decide something now: the listed ones (whose each listing is)
// and the process groups and sessions of the GPU files' holders (whose kin they are).
std::set<pid_t> numbers_with_evidence(const core::ProcView& view,
                                      const std::vector<pid_t>& listed) {
  std::set<pid_t> numbers(listed.begin(), listed.end());
  for (const auto& p : view.processes)
    if (p.holds_device()) {
      numbers.insert(p.stat.pgid);
      numbers.insert(p.stat.sid);
    }
  return numbers;
}

// The PIDs the driver lists, each once per GPU.
std::vector<pid_t> listed_pids(const DriverView& dv) {
  std::vector<pid_t> out;
  for (const auto& [gpu, pid] : dv.listed) out.push_back(pid);
  return out;
}

}  // namespace

void ScheduledCollector::carry_sightings(std::optional<core::CarriedSightings> previous) {
  carry_ = true;
  if (!previous) return;
  listed_since_.carry_over(*previous);
  rank_exits_.carry_over(std::move(previous->rank_exits), previous->watched_ranks);
  carried_ends_ = std::move(previous->ends);
  // A fork ties its child to the parent's life, which ended before the last run's last
  // reading: only a listing that run saw can be that life's context. One first seen later is
  // not (the driver lists a context from its creation), and the fork grants it nothing.
  std::set<pid_t> carried_listed;
  for (const auto& l : previous->listings) carried_listed.insert(l.pid);
  for (const auto& [child, fork] : previous->forks)
    if (carried_listed.count(fork.parent)) carried_forks_.emplace(child, fork);
}

void ScheduledCollector::add_carried(core::ProcView& view, const std::vector<pid_t>& listed) {
  // The ends date first sightings (ListedSince) and deny kin (core/ghost_verdict); kept while
  // their number decides either, as the next run's are (carried()).
  const std::set<pid_t> numbers = numbers_with_evidence(view, listed);
  std::erase_if(carried_ends_, [&](const auto& kv) { return !numbers.count(kv.first); });
  merge_ends(view.ends, carried_ends_);
  // ... and only while that listing lasts: listed again later, it is another context.
  const std::set<pid_t> listed_now(listed.begin(), listed.end());
  std::erase_if(carried_forks_, [&](const auto& kv) {
    const core::HostProcess* child = view.find(kv.first);
    return !child || child->stat.start_ticks != kv.second.child_start ||
           !listed_now.count(kv.second.parent);
  });
  std::map<pid_t, pid_t> forks;
  for (const auto& [child, fork] : carried_forks_) forks.emplace(child, fork.parent);
  merge_exited_parents(view.exited_parents, forks);
}

std::shared_ptr<const core::CarriedSightings> ScheduledCollector::carried(
    const core::ProcView& view, uint64_t read_at_ticks) const {
  auto out = std::make_shared<core::CarriedSightings>();
  out->pid_namespace = view.pid_namespace;
  out->saved_at_ticks = read_at_ticks;
  listed_since_.carry_into(*out);
  std::vector<pid_t> listed;
  for (const auto& l : out->listings) listed.push_back(l.pid);
  const std::set<pid_t> numbers = numbers_with_evidence(view, listed);
  for (const auto& [pid, lives] : view.ends)
    if (numbers.count(pid)) out->ends.emplace(pid, lives);
  out->forks = core::forks_of(view);
  out->rank_exits = view.rank_exits;
  out->watched_ranks = rank_exits_.watched();
  return out;
}

DriverRead ScheduledCollector::read_driver(const Cadence& cadence) {
  if (cadence.driver_timeout) driver_.set_timeout(*cadence.driver_timeout);
  return driver_.read();
}

std::shared_ptr<Collection> ScheduledCollector::complete(const Cadence& cadence,
                                                         Clock::time_point began,
                                                         DriverRead driver) {
  // Every process the reading lists started by now.
  const uint64_t read_at_ticks = boot_ticks_now();
  auto c = std::make_shared<Collection>();
  c->began = began;
  driver_timing_.seconds = seconds(driver.took);
  if (!driver.reading.any_available()) ++driver_timing_.errors;
  c->driver_timed_out = driver.timed_out;

  const auto now = Clock::now();
  const DriverView dv = driver_view(driver.reading);
  auto due = schedule_.due(now, dv, cadence);
  const ScanRequest asked = hints_ ? hints_->take() : ScanRequest{};
  ended_.exited(asked.exited);
  due.full = due.full || asked.full;
  // Between scans, what a scan would find ended (EndedProcesses), paused, resumed or blocked
  // (held_states_moved) is read again: the events mode and the scans answer alike at every
  // collection, and no policy decides on a state a scan read minutes ago.
  std::vector<pid_t> reread = asked.pids;
  bool rereads_only = false;
  const std::vector<pid_t> listed = listed_pids(dv);
  if (view_ && !due.scan && !due.full) {
    auto moved = ended_.moved(collector_.procfs(), *view_, listed);
    auto states = held_states_moved(collector_.procfs(), *view_, listed);
    moved.insert(moved.end(), states.begin(), states.end());
    rereads_only = reread.empty() && !moved.empty();
    reread.insert(reread.end(), moved.begin(), moved.end());
  }
  // Events alone (no scan due): only the processes they name and the known holders are read
  // again, not every process in /proc. A storm of opens by one user then costs a few reads
  // per wake-up, and a new holder is in the live view in milliseconds.
  const bool update = !due.scan && !due.full && !reread.empty() && view_;
  due.scan = due.scan || due.full || !reread.empty();
  if (due.scan) {
    // A rescan reads every listed PID's open files again, whatever the previous view knew:
    // they decide whether it is the listed process (core/listed_identity.h), and one that
    // opened its GPU's file since the last scan holds it now.
    std::vector<pid_t> rescanned = asked.pids;
    rescanned.insert(rescanned.end(), listed.begin(), listed.end());
    auto start = Clock::now();
    view_ = due.full ? collector_.scan_processes()
            : update ? collector_.update_processes(*view_, reread)
                     : collector_.rescan_processes(*view_, rescanned);
    if (hints_) hints_->scanned(*view_, due.full);
    lineage_.observe(*view_, boot_ticks_now());
    if (due.ipc_residue)
      ipc_ = std::make_shared<const procfs::IpcResidue>(collector_.ipc_residue(*view_));
    hostname_ = base::host_name();
    scan_timing_.seconds = seconds(Clock::now() - start);
    if (view_->uninspectable > 0 || !view_->details_complete) ++scan_timing_.errors;
    // An update is no scan: the next holder scan stays when it was due.
    if (!update) schedule_.done(now, due, dv, cadence);
  }
  collector_.add_driver_details(*view_, driver.reading);
  collector_.mark_work_servers(*view_, driver.reading);

  c->sequence = ++sequence_;
  // Re-reading processes that ended or changed state is no holder scan.
  c->holder_scan = due.scan && !rereads_only;
  c->full_scan = due.scan && due.full;
  core::ProcView view = *view_;
  if (hints_) {
    view.exited_parents = hints_->exited_parents();
    view.ends = hints_->ends();
  }
  merge_exited_parents(view.exited_parents, lineage_.exited_parents());
  merge_ends(view.ends, lineage_.ends());
  add_carried(view, listed);
  // An update (events alone) keeps a process's earlier entry where its read failed: only a
  // scan's view is surely of /proc after the reading.
  view.listed_since = listed_since_.update(driver.reading, read_at_ticks,
                                           due.scan && !update ? &view : nullptr, view.ends);
  view.listed_first_process = listed_since_.first_processes();
  listed_ends_.keep(view.ends, view.listed_since);
  rank_exits_.observe(view, boot_ticks_now(),
                      [&](pid_t pid) { return collector_.procfs().read_exit_status(pid); });
  view.rank_exits = rank_exits_.exits();
  if (carry_) c->carried = carried(view, read_at_ticks);
  c->snapshot = std::make_shared<const core::Snapshot>(core::join(
      std::move(view), std::move(driver.reading), hostname_, std::chrono::system_clock::now()));
  c->host = collector_.host_stats();
  c->ipc_residue = ipc_;
  c->driver = driver_timing_;
  c->scan = scan_timing_;
  c->ended = Clock::now();
  return c;
}

}  // namespace gpureap::engine
