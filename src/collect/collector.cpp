#include "collect/collector.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>

#include "backend/settings.h"
#include "base/hostname.h"
#include "collect/container_claims.h"
#include "kernel/blocked_task.h"
#include "kernel/gpu_events.h"
#include "procfs/fd_scan.h"
#include "procfs/open_files.h"

namespace gpureap::collect {
namespace {

struct Slot {
  std::optional<core::HostProcess> process;
  std::optional<std::string> warning;
  bool uninspectable = false;
};

// Per process: stat, then the fd scan. Processes are independent, so the work is split
// across cores; each worker takes the next chunk from a shared counter.
// A process `previous` had (same PID and start time) that held nothing and whose fds could be
// read: a rescan reuses that instead of reading its fd table again.
bool known_non_holder(const core::ProcView* previous, const core::ProcessStat& st) {
  if (!previous) return false;
  auto it = std::lower_bound(previous->processes.begin(), previous->processes.end(), st.pid,
                             [](const core::HostProcess& p, pid_t v) { return p.stat.pid < v; });
  return it != previous->processes.end() && it->stat.pid == st.pid &&
         it->stat.start_ticks == st.start_ticks && it->fds_readable && !it->holds_device();
}

std::vector<Slot> scan_all(const procfs::ProcFs& proc, const procfs::DeviceCatalog& catalog,
                           const std::vector<pid_t>& pids, const core::ProcView* previous,
                           const std::vector<pid_t>& changed,
                           const std::vector<procfs::FdObserver*>& observers) {
  std::vector<Slot> slots(pids.size());
  std::atomic<size_t> next{0};
  constexpr size_t kChunk = 64;
  auto work = [&] {
    for (;;) {
      size_t begin = next.fetch_add(kChunk);
      if (begin >= pids.size()) return;
      for (size_t i = begin; i < std::min(pids.size(), begin + kChunk); ++i) {
        auto st = proc.read_stat(pids[i]);
        if (!st) {
          slots[i].warning = st.error().message;
          continue;
        }
        if (!*st) continue;  // vanished
        core::HostProcess p;
        p.stat = std::move(**st);
        bool reread = std::binary_search(changed.begin(), changed.end(), p.stat.pid);
        if (!p.stat.is_kernel_thread() && !p.stat.is_zombie() &&
            (reread || !known_non_holder(previous, p.stat))) {
          auto scan = procfs::scan_device_fds(proc.dirfd(), pids[i], catalog, observers);
          if (scan.vanished) continue;
          p.fds_readable = scan.readable && !scan.sealed;
          p.devices = std::move(scan.holds);
          slots[i].uninspectable = !scan.readable;
          if (scan.sealed)
            slots[i].warning = "PID " + std::to_string(pids[i]) + " (" + p.stat.comm +
                               "): the kernel refuses to show its open files even to this user "
                               "(it is protected from ptrace); it is left out of the holder scan";
        }
        slots[i].process = std::move(p);
      }
    }
  };
  unsigned workers = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  if (pids.size() < 256) workers = 1;
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return slots;
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

core::ProcView Collector::scan(const core::ProcView* previous,
                               const std::vector<pid_t>& also) const {
  core::ProcView view;
  view.boot_time = proc_.boot_time();
  view.ticks_per_second = ::sysconf(_SC_CLK_TCK);
  view.in_child_pid_namespace = proc_.in_child_pid_namespace().value_or(false);
  view.driver_device_files = catalog_.drivers_present();
  auto pids = proc_.list_pids();
  std::sort(pids.begin(), pids.end());
  std::vector<procfs::FdObserver*> observers;
  if (drivers_) observers = drivers_->fd_observers();
  for (auto* o : observers) o->scan_started();
  std::vector<pid_t> changed(also);
  std::sort(changed.begin(), changed.end());
  auto slots = scan_all(proc_, catalog_, pids, previous, changed, observers);
  for (auto* o : observers) o->scan_finished();
  std::vector<pid_t> holders;
  for (auto& s : slots) {
    if (s.warning) view.warnings.push_back(*s.warning);
    if (s.uninspectable) ++view.uninspectable;
    if (!s.process) continue;
    if (s.process->holds_device()) holders.push_back(s.process->stat.pid);
    view.processes.push_back(std::move(*s.process));
  }
  // Only the few holders' fds are compared, so this costs little beside the scan itself.
  auto grouping = procfs::group_open_files(view.processes, proc_.names_own_processes());
  view.open_files_unknown = std::move(grouping.incomplete);
  for (auto* o : observers) o->open_files_grouped(view.processes, view.open_files_unknown);
  add_details(view, holders);
  return view;
}

void Collector::add_details(core::ProcView& view, const std::vector<pid_t>& pids) const {
  read_details(view, pids);
  settle_container_claims(view, proc_, roots_.sys_root + "/fs/cgroup", roots_.runtime_root);
}

void Collector::read_details(core::ProcView& view, const std::vector<pid_t>& pids) const {
  for (pid_t pid : pids) {
    auto it = std::lower_bound(view.processes.begin(), view.processes.end(), pid,
                               [](const core::HostProcess& p, pid_t v) { return p.stat.pid < v; });
    if (it == view.processes.end() || it->stat.pid != pid || it->details) continue;
    auto d = proc_.read_details(pid, it->stat.state == 'D');
    if (!d.complete) view.details_complete = false;
    it->details = std::move(d.details);
    // The parent's too: trees show it above its holder, with its user and command line.
    if (it->stat.ppid > 1) read_details(view, {it->stat.ppid});
  }
}

void Collector::add_driver_details(core::ProcView& view, const core::DriverReading& drivers) const {
  std::vector<pid_t> listed;
  for (const auto& g : drivers.gpus)
    for (const auto& p : g.processes) listed.push_back(p.pid);
  add_details(view, listed);
}

core::DriverReading Collector::read_drivers() const {
  return drivers_ ? drivers_->read() : backend::BackendSet().read();
}

core::Snapshot Collector::collect() const {
  auto view = scan_processes();
  auto drivers = read_drivers();
  add_driver_details(view, drivers);
  return core::join(std::move(view), std::move(drivers), base::host_name(),
                    std::chrono::system_clock::now());
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

std::vector<core::BlockedTask> Collector::blocked_tasks(const core::Snapshot& s) const {
  std::vector<core::BlockedTask> out;
  for (const auto& r : s.rows)
    if (r.has(core::Anomaly::Uninterruptible))
      out.push_back(kernel::read_blocked_task(
          proc_.root(), roots_.sys_root, r.pid,
          drivers_ ? drivers_->kernel_functions() : backend::BackendSet().kernel_functions()));
  return out;
}

procfs::HostStats Collector::host_stats() const {
  return procfs::read_host_stats(proc_.root());
}

}  // namespace gpureap::collect
