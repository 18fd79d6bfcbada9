#include "collect/collector.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>

#include "backend/settings.h"
#include "base/hostname.h"
#include "base/phase_timer.h"
#include "collect/container_claims.h"
#include "collect/work_servers.h"
#include "kernel/blocked_task.h"
#include "kernel/gpu_events.h"
#include "procfs/fd_scan.h"
#include "procfs/open_files.h"
#include "procfs/resource_shortage.h"
#include "procfs/thread_tables.h"

namespace gpureap::collect {
namespace {

// What the scan of one process found besides the process itself.
struct Slot {
  std::optional<std::string> warning;
  bool present = false;  // it was there (not vanished) when read
  bool uninspectable = false;
  // What gpureap could not read of it although permitted (out of file descriptors or memory),
  // and the errno: it may hold a GPU file unseen (ScanFailures).
  std::string failed_read;
  int failed = 0;
};

// The scan's failures, one sentence per cause however many processes met it: under a tiny
// limit of open files every process fails alike.
class ScanFailures {
 public:
  void add(const Slot& s) {
    if (!s.failed) return;
    note_kind(s.failed);
    for (auto& c : causes_)
      if (c.err == s.failed) {
        ++c.processes;
        return;
      }
    causes_.push_back({s.failed, s.failed_read, 1});
  }
  void add(const core::Error& e) {
    said_.push_back(e.text());
    note_kind(e.code);
  }
  // Every kind of shortage the failures met, in the enum's order.
  std::vector<core::Shortage> kinds() const { return {kinds_.begin(), kinds_.end()}; }
  std::vector<std::string> sentences() const {
    std::vector<std::string> out = said_;
    for (const auto& c : causes_)
      out.push_back(std::to_string(c.processes) + (c.processes == 1 ? " process" : " processes") +
                    " could not be scanned (" + c.first_read + ": " + std::strerror(c.err) + ")" +
                    (procfs::is_resource_shortage(c.err) ? ": " + procfs::shortage_remedy(c.err)
                                                         : std::string()));
    return out;
  }

 private:
  struct Cause {
    int err;
    std::string first_read;  // what failed, for the first process that met it
    size_t processes;
  };
  void note_kind(int err) {
    if (auto k = procfs::shortage_of(err)) kinds_.insert(*k);
  }
  std::vector<std::string> said_;
  std::vector<Cause> causes_;
  std::set<core::Shortage> kinds_;
};

// A process `previous` had (same PID and start time) that held nothing and whose fds could be
// read: a rescan reuses that instead of reading its fd table again.
// The same process (PID and start time) in `previous`, if it is there.
const core::HostProcess* known(const core::ProcView* previous, const core::ProcessStat& st) {
  if (!previous) return nullptr;
  const auto* p = previous->find(st.pid);
  return p && p->stat.start_ticks == st.start_ticks ? p : nullptr;
}

// It holds a DRM node: the only files whose fds a backend observes (DRM fdinfo).
bool holds_drm_node(const core::HostProcess& p) {
  return std::any_of(p.devices.begin(), p.devices.end(),
                     [](const core::DeviceHold& h) { return h.kind.rfind("drm", 0) == 0; });
}

bool known_non_holder(const core::ProcView* previous, const core::ProcessStat& st) {
  const auto* p = known(previous, st);
  return p && p->fds_readable && !p->holds_device();
}

// Runs `step(i)` for every i < n, split across cores: each worker takes the next chunk from a
// shared counter, as processes are independent. `busy`: cores another thread of the scan keeps
// busy meanwhile (the kernel's pass), left to it.
void in_parallel(size_t n, const std::function<void(size_t)>& step, unsigned busy = 0) {
  std::atomic<size_t> next{0};
  constexpr size_t kChunk = 64;
  auto work = [&] {
    for (;;) {
      size_t begin = next.fetch_add(kChunk);
      if (begin >= n) return;
      for (size_t i = begin; i < std::min(n, begin + kChunk); ++i) step(i);
    }
  };
  const unsigned cores = std::thread::hardware_concurrency();
  unsigned workers = std::clamp(cores > busy ? cores - busy : 1u, 1u, 8u);
  if (n < 256) workers = 1;
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

// The process read before its fd table is still the one under its PID: the stats are read
// before the tables (scan_all), and a PID reused in between would give one process's holds
// to another's row. Asked of holders only, after their table was read. A stat gpureap could
// not read (out of file descriptors) is no sign it left: `slot` says the failure instead.
bool still_there(const procfs::ProcFs& proc, const core::ProcessStat& read, Slot& slot) {
  auto now = proc.read_process_stat(read.pid);
  if (!now && procfs::is_resource_shortage(now.error().code)) {
    slot.failed = now.error().code;
    slot.failed_read = "reading /proc/PID/stat";
    return true;
  }
  return now && *now && (*now)->stat.start_ticks == read.start_ticks;
}

// The GPU files that threads of a process hold in fd tables of their own (unshare(CLONE_FILES)),
// added to `scan`, the table read through /proc/PID/fd (or the live thread `table_task`'s).
// Only a process with more than one thread has any; where the kernel's pass covered the
// process, only one it saw such a thread hold a GPU file in. The observers see those fds as
// they see the process's own (a DRM client opened in a thread's table is the process's).
void add_thread_tables(const procfs::ProcFs& proc, const procfs::DeviceCatalog& catalog,
                       const std::vector<procfs::FdObserver*>& observers,
                       const core::ProcessStat& st, pid_t table_task, procfs::FdScan& scan,
                       Slot& slot) {
  auto threads = procfs::threads_with_own_tables(proc.dirfd(), st.pid, table_task);
  if (threads.failed) {
    slot.failed = threads.failed;
    slot.failed_read = "comparing its threads' fd tables (kcmp)";
  }
  if (threads.threads.empty()) return;
  auto own = procfs::scan_thread_tables(proc.dirfd(), st.pid, threads.threads, catalog, observers);
  if (own.failed) {
    slot.failed = own.failed;
    slot.failed_read = "listing /proc/PID/task/TID/fd";
  }
  scan.sealed = scan.sealed || own.sealed;
  scan.readable = scan.readable && own.readable;
  for (auto& h : own.holds) scan.holds.push_back(std::move(h));
  std::sort(scan.holds.begin(), scan.holds.end(),
            [](const core::DeviceHold& a, const core::DeviceHold& b) {
              return std::tie(a.path, a.thread) < std::tie(b.path, b.thread);
            });
}

// A pass of the kernel's open-file iterator that may still be running (Collector::scan).
using PendingIndex = std::shared_future<std::optional<KernelFdIndex>>;

// Per process: stat, then the fd scan, into `processes[i]` (sized as `pids`). Every stat is
// read first, while a pending pass of the kernel's iterator runs beside on a core of its own
// (the pass and its load are the longer: they set the scan's time); the fd tables then
// (only the fds the pass found on a GPU file, where it covered the process). The processes are
// written where they will stay: no second copy of the list exists during a scan
// (std::optional<HostProcess> slots moved into a growing vector held three lists' worth at the
// peak).
std::vector<Slot> scan_all(const procfs::ProcFs& proc, const procfs::DeviceCatalog& catalog,
                           const std::vector<pid_t>& pids, const core::ProcView* previous,
                           const std::vector<pid_t>& changed,
                           const std::vector<procfs::FdObserver*>& observers,
                           std::vector<core::HostProcess>& processes, bool reread_holders = true,
                           const PendingIndex* pending = nullptr) {
  // Without reread_holders, a known holder no event named keeps its holds, unless a backend
  // observes its fds (a DRM node's): the observer must see every one, as in a scan.
  std::vector<Slot> slots(pids.size());
  processes.resize(pids.size());
  std::vector<pid_t> fd_tasks(pids.size());
  in_parallel(
      pids.size(),
      [&](size_t i) {
        // A process whose main thread has exited reads as its live thread makes it, and its fds
        // are read through that thread (procfs/thread_group.h).
        auto st = proc.read_process_stat(pids[i]);
        if (!st && procfs::is_resource_shortage(st.error().code)) {
          slots[i].failed = st.error().code;
          slots[i].failed_read = "reading /proc/PID/stat";
          return;
        }
        if (!st) {
          slots[i].warning = st.error().message;
          return;
        }
        if (!*st) return;  // vanished
        processes[i].stat = std::move((*st)->stat);
        fd_tasks[i] = (*st)->fd_task;
        slots[i].present = true;
      },
      pending ? 1 : 0);
  const KernelFdIndex* index = pending && pending->get() ? &*pending->get() : nullptr;
  // kcmp(2) takes PIDs of gpureap's namespace: a /proc of another one (a container's, the
  // host's seen from a container) or a fixture tree names other processes by those numbers, so
  // its threads' own fd tables cannot be told apart and are not read (as before threads had
  // any).
  const bool kcmp_names_them = proc.names_own_processes();
  in_parallel(pids.size(), [&](size_t i) {
    if (!slots[i].present) return;
    core::HostProcess& p = processes[i];
    bool reread = std::binary_search(changed.begin(), changed.end(), p.stat.pid);
    const core::HostProcess* was = reread_holders || reread ? nullptr : known(previous, p.stat);
    if (was && was->holds_device() && (observers.empty() || !holds_drm_node(*was))) {
      p.devices = was->devices;
      p.fds_readable = was->fds_readable;
    } else if (!p.stat.is_kernel_thread() && !p.stat.is_zombie() &&
               (reread || !known_non_holder(previous, p.stat))) {
      // Where the main thread has exited, the pass names its live threads' shared table by
      // each thread's id: that table is read whole instead.
      const std::vector<int>* gpu_fds =
          index && !fd_tasks[i] ? index->gpu_fds(p.stat.pid, p.stat.start_ticks) : nullptr;
      auto scan =
          gpu_fds ? procfs::scan_listed_fds(proc.dirfd(), pids[i], *gpu_fds, catalog, observers,
                                            fd_tasks[i])
                  : procfs::scan_device_fds(proc.dirfd(), pids[i], catalog, observers, fd_tasks[i]);
      if (scan.failed) {
        slots[i].failed = scan.failed;
        slots[i].failed_read = "listing /proc/PID/fd";
      }
      if (kcmp_names_them && p.stat.num_threads > 1 && scan.readable && !scan.sealed &&
          !scan.vanished && !scan.failed &&
          (!gpu_fds || index->thread_holds(p.stat.pid, p.stat.start_ticks)))
        add_thread_tables(proc, catalog, observers, p.stat, scan.task ? scan.task : pids[i], scan,
                          slots[i]);
      if (scan.vanished || (!scan.holds.empty() && !still_there(proc, p.stat, slots[i]))) {
        slots[i].present = false;
        return;
      }
      p.fds_readable = scan.readable && !scan.sealed && !scan.failed;
      p.devices = std::move(scan.holds);
      slots[i].uninspectable = !scan.readable;
      if (scan.sealed)
        slots[i].warning = "PID " + std::to_string(pids[i]) + " (" + p.stat.comm +
                           "): the kernel refuses to show its open files even to this user "
                           "(it is protected from ptrace); it is left out of the holder scan";
    }
  });
  return slots;
}

// The same stat, field by field (its figures move while a process runs).
bool same_stat(const core::ProcessStat& a, const core::ProcessStat& b) {
  return a.pid == b.pid && a.comm == b.comm && a.state == b.state && a.ppid == b.ppid &&
         a.pgid == b.pgid && a.sid == b.sid && a.flags == b.flags &&
         a.start_ticks == b.start_ticks && a.num_threads == b.num_threads &&
         a.rss_pages == b.rss_pages && a.cpu_ticks == b.cpu_ticks &&
         a.leader_exited == b.leader_exited && a.wait_status == b.wait_status;
}

// The same GPU files on the same fds, whether or not the holds are split by open file yet.
bool same_device_fds(const core::HostProcess& a, const core::HostProcess& b) {
  auto fds = [](const core::HostProcess& p) {
    std::vector<std::tuple<std::string, pid_t, int>> out;
    for (const auto& h : p.devices)
      for (int fd : h.fds) out.emplace_back(h.path, h.thread, fd);
    std::sort(out.begin(), out.end());
    return out;
  };
  return fds(a) == fds(b);
}

}  // namespace

core::Result<Collector> Collector::open(const Roots& roots,
                                        std::shared_ptr<backend::BackendSet> drivers) {
  auto proc = procfs::ProcFs::open(roots.proc_root);
  if (!proc) return proc.error();
  // The device nodes the registry's entries name (a set made without one: the built-in ones).
  auto catalog = procfs::DeviceCatalog::enumerate(
      drivers ? drivers->device_nodes() : backend::BackendSet().device_nodes(), roots.dev_root,
      roots.proc_root, roots.sys_root);
  if (!catalog) return catalog.error();
  Roots resolved = roots;
  if (resolved.runtime_root.empty()) resolved.runtime_root = backend::folder_above(roots.proc_root);
  struct stat st {};
  const bool found = ::stat(resolved.runtime_root.c_str(), &st) == 0;
  if (!roots.runtime_root.empty() && (!found || !S_ISDIR(st.st_mode)))
    return core::Error{"cannot open runtime root " + roots.runtime_root + ": " +
                           (found ? std::string("not a folder") : std::strerror(errno)),
                       "pass the folder that holds the host's var/lib/docker, run/containerd "
                       "and var/log/pods with --runtime-root (\"/\" on the host itself)"};
  return Collector(resolved, std::move(*proc), std::move(*catalog), std::move(drivers));
}

core::ProcView Collector::scan_processes() const {
  return scan(nullptr);
}

core::ProcView Collector::rescan_processes(const core::ProcView& previous,
                                           const std::vector<pid_t>& also) const {
  return scan(&previous, also);
}

core::ProcView Collector::empty_view() const {
  core::ProcView view;
  view.boot_time = proc_.boot_time();
  view.ticks_per_second = ::sysconf(_SC_CLK_TCK);
  view.in_child_pid_namespace = proc_.in_child_pid_namespace().value_or(false);
  view.pid_namespace = proc_.pid_namespace();
  view.driver_device_files = catalog_.drivers_present();
  return view;
}

core::ProcView Collector::scan(const core::ProcView* previous,
                               const std::vector<pid_t>& also) const {
  core::ProcView view = empty_view();
  // A full scan asks the kernel's iterator which fds to read, on a thread of its own while the
  // stats are read.
  std::optional<PendingIndex> index;
  if (!previous && may_use_kernel_iterator())
    index = std::async(std::launch::async, [this] { return kernel_fd_index(); }).share();
  std::optional<base::Phase> phase(std::in_place, "proc scan");
  ScanFailures failures;
  auto listed = proc_.list_pids();
  if (!listed) failures.add(listed.error());
  auto pids = listed ? std::move(*listed) : std::vector<pid_t>{};
  std::sort(pids.begin(), pids.end());
  std::vector<procfs::FdObserver*> observers;
  if (drivers_) observers = drivers_->fd_observers();
  for (auto* o : observers) o->scan_started();
  std::vector<pid_t> changed(also);
  std::sort(changed.begin(), changed.end());
  std::vector<core::HostProcess> processes;
  auto slots = scan_all(proc_, catalog_, pids, previous, changed, observers, processes, true,
                        index ? &*index : nullptr);
  if (index) {
    index->wait();
    std::lock_guard<std::mutex> lock(kernel_iterator_->mutex);
    if (kernel_iterator_->shortage) view.warnings.push_back(*kernel_iterator_->shortage);
  }
  for (auto* o : observers) o->scan_finished();
  phase.emplace("open-file comparison");
  std::vector<pid_t> holders;
  size_t kept = 0;  // the processes that were there, moved to the front in order
  for (size_t i = 0; i < slots.size(); ++i) {
    const auto& s = slots[i];
    if (s.warning) view.warnings.push_back(*s.warning);
    if (s.uninspectable) ++view.uninspectable;
    failures.add(s);
    if (!s.present) continue;
    if (processes[i].holds_device()) holders.push_back(processes[i].stat.pid);
    if (kept != i) processes[kept] = std::move(processes[i]);
    ++kept;
  }
  processes.resize(kept);  // keeps the capacity: the few vanished ones cost a few slots
  view.scan_failures = failures.sentences();
  view.scan_shortages = failures.kinds();
  // Only the few holders' fds are compared, so this costs little beside the scan itself.
  auto grouping = procfs::group_open_files(processes, proc_.names_own_processes(), proc_.dirfd());
  view.open_files_unknown = std::move(grouping.incomplete);
  for (auto* o : observers) o->open_files_grouped(processes, view.open_files_unknown);
  view.processes = std::move(processes);
  phase.emplace("holder details");
  add_details(view, holders);
  return view;
}

bool Collector::may_use_kernel_iterator() const {
  std::lock_guard<std::mutex> lock(kernel_iterator_->mutex);
  if (kernel_iterator_->tried) return kernel_iterator_->iterator.has_value();
  // The pass names processes by their PIDs in the initial namespace and reads the live
  // kernel: only a proc root that is this process's own /proc there can be joined with it.
  // GPUREAP_BPF=0 keeps to /proc (a site that audits every BPF program loaded).
  const char* off = std::getenv("GPUREAP_BPF");
  const bool wanted = !(off && std::string_view(off) == "0");
  return wanted && kernel::OpenFileIterator::permitted() && proc_.names_own_processes() &&
         proc_.is_procfs() && proc_.in_child_pid_namespace() == false;
}

std::optional<KernelFdIndex> Collector::kernel_fd_index() const {
  std::lock_guard<std::mutex> lock(kernel_iterator_->mutex);
  auto& slot = *kernel_iterator_;
  slot.shortage.reset();
  // Where the time goes (GPUREAP_TIMING) says why it goes there; a shortage of gpureap's own
  // is said to everyone, since raising the limit is theirs to do.
  auto unavailable = [&slot](const core::Error& why) {
    if (base::timing_enabled())
      std::fprintf(stderr, "gpureap: timing: kernel open-file iterator unavailable: %s\n",
                   why.text().c_str());
    if (procfs::is_resource_shortage(why.code))
      slot.shortage = "the kernel's open-file iterator could not be used (" + why.message +
                      "), so every fd table was read through /proc, more slowly; " +
                      procfs::shortage_remedy(why.code);
  };
  if (!slot.tried) {
    slot.tried = true;
    base::Phase phase("kernel open-file iterator load");
    auto loaded = kernel::OpenFileIterator::load();
    if (loaded)
      slot.iterator = std::move(*loaded);
    else
      unavailable(loaded.error());
  }
  if (!slot.iterator) return std::nullopt;
  base::Phase phase("kernel open-file pass");
  auto index = KernelFdIndex::read(*slot.iterator, catalog_, ::sysconf(_SC_CLK_TCK));
  if (!index) {
    unavailable(index.error());
    slot.iterator.reset();  // a pass that misreads once is not asked again
    return std::nullopt;
  }
  return std::move(*index);
}

core::ProcView Collector::update_processes(const core::ProcView& previous,
                                           const std::vector<pid_t>& changed) const {
  core::ProcView view = previous;  // shares the process list until something differs
  const auto& old = previous.processes;
  std::vector<pid_t> asked(changed);
  for (const auto& p : old)
    if (p.holds_device()) asked.push_back(p.stat.pid);
  std::sort(asked.begin(), asked.end());
  asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
  std::vector<pid_t> named(changed);
  std::sort(named.begin(), named.end());

  std::vector<procfs::FdObserver*> observers;
  if (drivers_) observers = drivers_->fd_observers();
  for (auto* o : observers) o->scan_started();
  // Rounds: the processes asked for, then those they name (parent, group and session leader)
  // that the list lacks, so the join does not take a new job's leaders for gone.
  std::vector<core::HostProcess> fresh;  // read now, sorted by pid at the end
  std::vector<pid_t> vanished;
  std::vector<pid_t> round = asked, seen = asked;
  ScanFailures failures;
  while (!round.empty()) {
    std::vector<core::HostProcess> found;
    auto slots = scan_all(proc_, catalog_, round, &previous, named, observers, found, false);
    std::vector<pid_t> next;
    for (size_t i = 0; i < slots.size(); ++i) {
      // The previous scan's warnings are kept; one said again is not added twice.
      if (slots[i].warning && std::find(view.warnings.begin(), view.warnings.end(),
                                        *slots[i].warning) == view.warnings.end())
        view.warnings.push_back(*slots[i].warning);
      failures.add(slots[i]);
      if (!slots[i].present) {
        // Gone from the list; a leader that was never in it (a session whose leader has
        // exited long ago) changes nothing. One gpureap failed to read is not gone.
        if (!slots[i].warning && !slots[i].failed && previous.find(round[i]))
          vanished.push_back(round[i]);
        continue;
      }
      const auto& st = found[i].stat;
      for (pid_t kin : {st.ppid, st.pgid, st.sid})
        if (kin > 1 && !view.find(kin) && !std::binary_search(seen.begin(), seen.end(), kin) &&
            std::find(next.begin(), next.end(), kin) == next.end())
          next.push_back(kin);
      fresh.push_back(std::move(found[i]));
    }
    std::sort(next.begin(), next.end());
    seen.insert(seen.end(), next.begin(), next.end());
    std::sort(seen.begin(), seen.end());
    round = std::move(next);
  }
  for (auto* o : observers) o->scan_finished();
  // The previous scan's failures stand until a read fails anew (its words then) or the next
  // full scan reads everything again.
  if (auto now = failures.sentences(); !now.empty()) {
    view.scan_failures = std::move(now);
    view.scan_shortages = failures.kinds();
  }
  std::sort(fresh.begin(), fresh.end(), [](const core::HostProcess& a, const core::HostProcess& b) {
    return a.stat.pid < b.stat.pid;
  });
  std::sort(vanished.begin(), vanished.end());

  // What differs from the list: a process read again that is new, or whose stat or holds
  // moved (one that did not keeps its entry: its open-file ids, its details).
  bool holds_moved = false, differs = !vanished.empty();
  std::vector<pid_t> detail;  // holders to read details for: new, or named by an event
  for (auto& p : fresh) {
    const core::HostProcess* was = previous.find(p.stat.pid);
    const bool same_process = was && was->stat.start_ticks == p.stat.start_ticks;
    const bool same_holds = same_process && same_device_fds(*was, p);
    if (!same_holds && (p.holds_device() || (was && was->holds_device()))) holds_moved = true;
    // Unchanged, or a process that held nothing and still holds nothing (a storm's opener
    // between two opens: only its figures moved, and no row shows them): kept as it is, so
    // the list stays shared. Its end is no figure: one that died or began exiting since is
    // taken as read now (a rank read in do_exit() has closed its files; kept, its death would
    // never reach the view).
    const bool still_none = same_holds && !p.holds_device() &&
                            was->stat.is_zombie() == p.stat.is_zombie() &&
                            was->stat.is_exiting() == p.stat.is_exiting();
    if (same_holds && was->fds_readable == p.fds_readable &&
        (still_none || same_stat(was->stat, p.stat))) {
      p = *was;
      continue;
    }
    differs = true;
    if (same_holds) p.devices = was->devices;  // already split by open file
    // Details are read again for a process an event named, one that changed state (a D
    // state's wait channel), or a new one; kept for a holder whose stat alone moved.
    const bool named_now = std::binary_search(named.begin(), named.end(), p.stat.pid);
    if (same_process && !named_now && was->details && was->stat.state == p.stat.state &&
        was->stat.comm == p.stat.comm)
      p.details = was->details;
    if (p.holds_device()) detail.push_back(p.stat.pid);
  }
  if (differs) {
    std::vector<core::HostProcess> merged;
    merged.reserve(old.size() + fresh.size());
    auto f = fresh.begin();
    for (const auto& p : old) {
      for (; f != fresh.end() && f->stat.pid < p.stat.pid; ++f) merged.push_back(std::move(*f));
      if (f != fresh.end() && f->stat.pid == p.stat.pid) {
        merged.push_back(std::move(*f++));
        continue;
      }
      if (!std::binary_search(vanished.begin(), vanished.end(), p.stat.pid)) merged.push_back(p);
    }
    for (; f != fresh.end(); ++f) merged.push_back(std::move(*f));
    if (holds_moved) {
      auto grouping = procfs::group_open_files(merged, proc_.names_own_processes(), proc_.dirfd());
      view.open_files_unknown = std::move(grouping.incomplete);
    }
    view.processes = std::move(merged);
  }
  for (auto* o : observers) o->open_files_grouped(view.processes, view.open_files_unknown);
  add_details(view, detail);
  return view;
}

void Collector::add_details(core::ProcView& view, const std::vector<pid_t>& pids) const {
  read_details(view, pids);
  read_rank_siblings(view);
  settle_container_claims(view, proc_, roots_.sys_root + "/fs/cgroup", roots_.runtime_root);
}

namespace {

// Where `pid` is in the view's list, if it is there without its details. Found without editing:
// the list may be shared with snapshots already taken, and is copied only when a process in it
// gains its details.
std::optional<size_t> without_details(const core::ProcView& view, pid_t pid) {
  const auto& list = view.processes;
  auto it = std::lower_bound(list.begin(), list.end(), pid,
                             [](const core::HostProcess& p, pid_t v) { return p.stat.pid < v; });
  if (it == list.end() || it->stat.pid != pid || it->details) return std::nullopt;
  return static_cast<size_t>(it - list.begin());
}

}  // namespace

void Collector::read_details(core::ProcView& view, const std::vector<pid_t>& pids,
                             bool label_all) const {
  for (pid_t pid : pids) {
    const auto index = without_details(view, pid);
    if (!index) continue;
    const core::HostProcess& found = view.processes[*index];
    // A rank of a distributed job opens the GPU itself: its labels say which rank it is, and
    // its wait channel whether it waits for the others (doctor's stalled-job).
    std::optional<core::RankLabels> labels;
    if (label_all || found.holds_gpu_file()) labels = proc_.read_rank_labels(pid);
    auto d = proc_.read_details(pid, found.stat.state == 'D' || labels.has_value());
    if (!d.complete) view.details_complete = false;
    auto& p = view.processes.edit()[*index];
    p.details = std::move(d.details);
    if (p.details) p.details->rank_labels = std::move(labels);
    // The parent's too: trees show it above its holder, with its user and command line.
    if (p.stat.ppid > 1) read_details(view, {p.stat.ppid});
  }
}

// A rank's launcher may have other ranks that hold no GPU file (yet, or at all): their labels
// tell a rank that is gone from one that lives without the GPU. Its exited children it has not
// reaped get their owner alone (one read of their status, the only details a zombie keeps): a
// zombie of the launcher's user that ended abnormally is the kernel's word that a process of
// the job failed (core/distributed_job.h), and another user's is no part of the job.
void Collector::read_rank_siblings(core::ProcView& view) const {
  std::set<pid_t> launchers;
  for (const auto& p : view.processes)
    if (p.details && p.details->rank_labels && p.stat.ppid > 1) launchers.insert(p.stat.ppid);
  std::vector<pid_t> siblings, zombies;
  for (const auto& p : view.processes)
    if (!p.details && launchers.count(p.stat.ppid))
      (p.is_live() ? siblings : zombies).push_back(p.stat.pid);
  if (!siblings.empty()) read_details(view, siblings, true);
  for (pid_t pid : zombies) {
    const auto index = without_details(view, pid);
    if (!index) continue;
    auto d = proc_.read_owner(pid);
    if (!d.complete) view.details_complete = false;
    view.processes.edit()[*index].details = std::move(d.details);
  }
}

void Collector::add_driver_details(core::ProcView& view, const core::DriverReading& drivers) const {
  std::vector<pid_t> listed;
  for (const auto& g : drivers.gpus)
    for (const auto& p : g.processes) listed.push_back(p.pid);
  add_details(view, listed);
}

void Collector::mark_work_servers(const core::ProcView& view, core::DriverReading& drivers) const {
  collect::mark_work_servers(
      view, drivers,
      drivers_ ? drivers_->work_servers() : backend::work_servers(backend::builtin_backends()));
}

core::DriverReading Collector::read_drivers() const {
  return drivers_ ? drivers_->read() : backend::BackendSet().read();
}

core::Snapshot Collector::collect() const {
  core::ProcView view;
  std::optional<base::Phase> phase(std::in_place, "proc scan and driver read");
  // The drivers answer while /proc is scanned: the one-shot commands wait for the slower.
  auto scan = [&] { view = scan_processes(); };
  auto drivers = drivers_ ? drivers_->read_beside(scan) : backend::BackendSet().read_beside(scan);
  phase.emplace("listed process details");
  add_driver_details(view, drivers);
  mark_work_servers(view, drivers);
  if (sightings_) core::adopt_sightings(view, drivers, *sightings_);
  phase.emplace("join");
  return core::join(std::move(view), std::move(drivers), base::host_name(),
                    std::chrono::system_clock::now());
}

std::optional<std::string> Collector::adopt_sightings(core::ListedSightings sightings) {
  // Boot and PID namespace are the procfs's own: every view collected later has this one's.
  if (auto why = core::sightings_mismatch(sightings, empty_view())) return why;
  sightings_ = std::make_shared<const core::ListedSightings>(std::move(sightings));
  return std::nullopt;
}

procfs::IpcResidue Collector::ipc_residue(const core::ProcView& view) const {
  std::vector<pid_t> live;
  live.reserve(view.processes.size());
  for (const auto& p : view.processes) live.push_back(p.stat.pid);  // sorted, as the view
  return procfs::find_ipc_residue(proc_, catalog_.dev_root(), live);
}

std::vector<std::string> Collector::device_file_paths() const {
  std::vector<std::string> out;
  for (const auto& f : catalog_.files()) out.push_back(f.path);
  return out;
}

core::KernelLog Collector::kernel_log(const core::Snapshot& s) const {
  return kernel::read_kernel_log(
      roots_.kmsg, s.proc.boot_time, s.drivers.gpus,
      drivers_ ? drivers_->kernel_log_parsers() : backend::BackendSet().kernel_log_parsers());
}

std::vector<std::string> Collector::work_server_log(const core::Snapshot& s) const {
  return read_work_server_logs(
      roots_.runtime_root, roots_.proc_root, s,
      drivers_ ? drivers_->work_servers() : backend::work_servers(backend::builtin_backends()));
}

std::vector<core::BlockedTask> read_blocked_tasks(
    const std::string& proc_root, const std::string& sys_root, const core::Snapshot& s,
    const std::vector<std::string>& kernel_functions) {
  std::vector<core::BlockedTask> out;
  for (const auto& r : s.rows)
    if (r.has(core::Anomaly::Uninterruptible))
      out.push_back(kernel::read_blocked_task(proc_root, sys_root, r.pid, kernel_functions));
  return out;
}

std::vector<core::BlockedTask> Collector::blocked_tasks(const core::Snapshot& s) const {
  return read_blocked_tasks(
      proc_.root(), roots_.sys_root, s,
      drivers_ ? drivers_->kernel_functions() : backend::BackendSet().kernel_functions());
}

procfs::HostStats Collector::host_stats() const {
  return procfs::read_host_stats(proc_.root());
}

}  // namespace gpureap::collect
