#pragma once
// Collects one Snapshot: /proc (every process, the fd holder scan, details for the rows that
// will be shown) and every GPU backend, then joins them.
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backend/backend_set.h"
#include "collect/kernel_fd_index.h"
#include "core/kernel_event.h"
#include "core/listed_sightings.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "procfs/device_files.h"
#include "procfs/host_stats.h"
#include "procfs/ipc_residue.h"
#include "procfs/proc_fs.h"

namespace gpureap::collect {

struct Roots {
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  std::string sys_root = "/sys";
  std::string kmsg = "/dev/kmsg";  // the kernel log, or a saved copy of it (--kmsg)
  // Where the container runtimes keep their state (var/lib/docker, run/containerd, ...): the
  // host's "/", or where a container mounted it (--runtime-root). Empty: the folder that holds
  // the proc root ("/" for /proc, /host for /host/proc).
  std::string runtime_root;
};

// Why each process of `s` in uninterruptible sleep (D) is stuck, read from `proc_root` and
// `sys_root` and told by `kernel_functions` (the drivers' function names in a kernel stack): for
// a command that reads what the kernel shows of a snapshot it did not collect (the daemon's).
std::vector<core::BlockedTask> read_blocked_tasks(const std::string& proc_root,
                                                  const std::string& sys_root,
                                                  const core::Snapshot& s,
                                                  const std::vector<std::string>& kernel_functions);

class Collector {
 public:
  // Fails (with a message naming the root and what to do) when a root is unusable.
  // `drivers` may be null: /proc alone (every reading then says no backend is configured).
  static core::Result<Collector> open(const Roots& roots,
                                      std::shared_ptr<backend::BackendSet> drivers);

  // /proc alone: every process with its GPU device-file holds; details for holders.
  core::ProcView scan_processes() const;
  // The same, but the fd tables of processes `previous` already had (same PID and start time)
  // that held no GPU file are not read again; everyone's stat is. Reading every fd link is
  // most of a scan's cost, and a long-lived process seldom starts holding a device file
  // without the driver listing it: the daemon alternates these with full scans.
  // `also`: processes whose open files an event says changed, read even when they held nothing.
  core::ProcView rescan_processes(const core::ProcView& previous,
                                  const std::vector<pid_t>& also = {}) const;
  // What events said changed, without listing /proc again: `previous` with the processes
  // `changed` re-read (stat and fd table), every other holder of `previous` re-read (its stat;
  // its fd table too where it holds a DRM node a backend observes, so that the backend sees
  // every such fd as in a scan; else its holds change only with an event naming it, as GPU
  // files are watched), and any process those name as
  // parent, group or session leader that `previous` lacks read in. Every other process is as
  // `previous` had it. Costs a read or two per holder instead of a scan of every process: the
  // daemon's answer to a holder's event. Where nothing changed the result shares `previous`'s
  // process list (core::SharedList).
  core::ProcView update_processes(const core::ProcView& previous,
                                  const std::vector<pid_t>& changed) const;
  // Details of the PIDs the driver lists (and their parents) that `view` lacks: the daemon
  // reads the driver more often than it scans /proc, and joins the same view again.
  void add_driver_details(core::ProcView& view, const core::DriverReading& drivers) const;
  // The listed servers of other processes' GPU work, verified against `view` (after
  // add_driver_details), and each client's server (collect/work_servers).
  void mark_work_servers(const core::ProcView& view, core::DriverReading& drivers) const;
  // The drivers alone, every backend: kill's release verification polls them without
  // rescanning /proc.
  core::DriverReading read_drivers() const;
  core::Snapshot collect() const;
  // What the node's daemon saw of the listings (core/listed_sightings.h), taken on by every
  // collect() after this: a command that signals from its own scan then disowns a listed
  // number's newcomer as the daemon does. Returns why they cannot speak of this collector's
  // processes (core::sightings_mismatch: another boot, another PID namespace), and then takes
  // nothing; empty when they are taken.
  std::optional<std::string> adopt_sightings(core::ListedSightings sightings);
  // Host-memory leftovers of killed jobs (doctor's ipc-residue) beside the processes of `view`:
  // costly when the dev root's shm has old files, so asked for apart from collect().
  procfs::IpcResidue ipc_residue(const core::ProcView& view) const;
  // The GPU errors of the kernel log (the registry's parsers), matched to the snapshot's GPUs.
  // Reads the whole log: asked for by doctor and ps, once; the daemon follows the log instead.
  core::KernelLog kernel_log(const core::Snapshot& s) const;
  // Why each process of `s` in uninterruptible sleep (D) is stuck: its wait channel, kernel
  // stack and the FUSE or NFS mount it waits on (read_blocked_tasks, with its drivers' kernel
  // functions).
  std::vector<core::BlockedTask> blocked_tasks(const core::Snapshot& s) const;
  // The last lines of the log of the daemon that starts `s`'s servers of other processes' work
  // (WorkServer::log_dir under the runtime root), for doctor's evidence (collect/work_servers).
  std::vector<std::string> work_server_log(const core::Snapshot& s) const;
  const Roots& roots() const { return roots_; }
  // The host's load and memory, from the same procfs.
  procfs::HostStats host_stats() const;

  // Full scans read every fd table through /proc and never load the kernel's open-file
  // iterator: for the daemon, whose full scans come once a minute and whose peak memory the
  // iterator's load (the kernel's type information, 5 MiB, read whole) would raise by a third.
  void keep_to_proc() {
    std::lock_guard<std::mutex> lock(kernel_iterator_->mutex);
    kernel_iterator_->tried = true;
    kernel_iterator_->iterator.reset();
  }

  const procfs::ProcFs& procfs() const { return proc_; }
  // The GPU device files under the dev root, as the holder scan matches them.
  std::vector<std::string> device_file_paths() const;
  const std::shared_ptr<backend::BackendSet>& drivers() const { return drivers_; }

 private:
  Collector(Roots roots, procfs::ProcFs proc, procfs::DeviceCatalog catalog,
            std::shared_ptr<backend::BackendSet> drivers)
      : roots_(std::move(roots)),
        proc_(std::move(proc)),
        catalog_(std::move(catalog)),
        drivers_(std::move(drivers)) {}
  void add_details(core::ProcView& view, const std::vector<pid_t>& pids) const;
  // `label_all`: read every one's rank labels, not only a GPU-file holder's.
  void read_details(core::ProcView& view, const std::vector<pid_t>& pids,
                    bool label_all = false) const;
  void read_rank_siblings(core::ProcView& view) const;
  core::ProcView scan(const core::ProcView* previous, const std::vector<pid_t>& also = {}) const;
  // A view of no process yet: what every scan's view says of the procfs itself (its boot, its
  // PID namespace).
  core::ProcView empty_view() const;
  // A full scan may ask the kernel's open-file iterator (not yet refused, or loaded).
  bool may_use_kernel_iterator() const;
  // A pass of the kernel's open-file iterator for a full scan, where it can be had.
  std::optional<KernelFdIndex> kernel_fd_index() const;

  Roots roots_;
  procfs::ProcFs proc_;
  procfs::DeviceCatalog catalog_;
  std::shared_ptr<backend::BackendSet> drivers_;
  std::shared_ptr<const core::ListedSightings> sightings_;
  // Loaded at the first full scan, where this process may and the proc root is the live /proc
  // of the initial PID namespace (kernel_fd_index.h); shared by the copies of this collector.
  struct KernelIterator {
    std::mutex mutex;
    bool tried = false;
    std::optional<kernel::OpenFileIterator> iterator;
    // Why the last full scan read /proc instead, where gpureap ran short of file descriptors
    // or memory: said as a warning (the scan is whole, only slower), not only with timing.
    std::optional<std::string> shortage;
  };
  std::shared_ptr<KernelIterator> kernel_iterator_ = std::make_shared<KernelIterator>();
};

}  // namespace gpureap::collect
