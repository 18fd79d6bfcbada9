#pragma once
// The immutable, timestamped joined view: what /proc knows and what the driver reports.
// Consumers (ps, doctor, reaper, daemon, top) read only this.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/anomaly.h"
#include "core/ghost.h"
#include "core/gpu.h"
#include "core/process.h"
#include "core/shared_list.h"

namespace gpureap::core {

// Memory a driver lists for one process on one GPU.
struct GpuUse {
  unsigned index = 0;
  std::optional<uint64_t> used_bytes;
  GpuProcessKind kind = GpuProcessKind::Compute;
  std::optional<unsigned> sm_utilization_percent;
  std::vector<MemoryRegionUse> regions;  // DriverProcess::regions
  std::vector<pid_t> shared_with;        // DriverProcess::sharers
  // The instance of a split GPU (GpuInstance) the driver lists it in.
  std::optional<unsigned> gpu_instance_id;
  std::optional<unsigned> compute_instance_id;
  // A server of other processes' GPU work (DriverProcess::serves_clients): what it is called,
  // and the clients listed on this GPU that name it as their server.
  std::optional<std::string> serves_clients;
  std::vector<pid_t> clients;
  std::optional<pid_t> server;  // a client's server on this GPU (DriverProcess::server)
};

// The live process that has a listed PID's number now and is not the listed process.
struct ReusedPid {
  enum class Why {
    HoldsNoFile,          // it holds no device file of any GPU that lists the PID
    StartedAfterListing,  // it started after the daemon first saw the PID listed
  };
  Why why = Why::HoldsNoFile;
  std::string comm;  // what it calls itself: a label only
  std::optional<uid_t> uid;
  uint64_t start_ticks = 0;
};

// One row of the joined view: a device-file holder, a driver-listed PID, or both.
struct ProcessRow {
  pid_t pid = 0;
  std::optional<HostProcess> process;  // empty: listed by the driver, absent from /proc
  bool listed_by_driver = false;
  std::vector<GpuUse> gpus;
  // What the driver calls it; never set on a gone listing's row (the driver names a PID by
  // whichever process has the number when asked).
  std::optional<std::string> driver_name;
  std::vector<Anomaly> anomalies;

  // The ghost verdict for this row (core/ghost_verdict.cpp):
  std::vector<pid_t> shares_context_of;  // live listed processes whose open GPU file it shares
  std::vector<pid_t> keeps;              // gone listed PIDs whose context it keeps alive
  // A listed PID whose number a live process has now that is not the listed process
  // (core/listed_identity.h): `process` is then empty, as for a PID gone from /proc.
  std::optional<ReusedPid> reused;

  bool has(Anomaly a) const;
  bool is_ghost() const;
  // The memory the driver lists it using, over every GPU.
  uint64_t listed_bytes() const;
};

// One process's life, as the daemon saw it end: clock ticks since boot (ProcessStat's unit).
struct ProcessEnd {
  uint64_t start_ticks = 0;
  uint64_t end_ticks = 0;
  // It held a GPU device file when last seen: only such a life can be a listed process's
  // (core/listed_identity); a holder's parent that held none was another process.
  bool held = true;
  // As waitpid(2) would report it, from the kernel's exit event (the daemon's events); empty
  // where the end was learned from one scan to the next, or its exit event was lost.
  std::optional<int> wait_status;
  bool operator==(const ProcessEnd&) const = default;
};

// A rank of a distributed job (core/distributed_job.h) that the daemon saw end while its
// launcher lived: which rank, when, and how. Kept while that launcher lives.
struct RankExit {
  pid_t launcher = 0;
  uint64_t launcher_start_ticks = 0;
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  std::optional<unsigned> local_rank;  // its LOCAL_RANK label while it lived
  uint64_t end_ticks = 0;              // clock ticks since boot
  // As waitpid(2) reports it (the exit code or the signal that ended it), read from /proc while
  // it was a zombie; empty when its parent reaped it before the daemon looked.
  std::optional<int> wait_status;
  // No exit event of the kernel dated the end (lost in an overflow of the events' queue, or a
  // daemon that only scans): end_ticks is when a view first showed it ended, and it ended no
  // later. The exact moment is nowhere in /proc.
  bool end_upper_bound = false;
  bool operator==(const RankExit&) const = default;
};

// What /proc gave the collector, before the join.
struct ProcView {
  // Every process, sorted by pid; shared by the snapshots taken from one scan.
  SharedList<HostProcess> processes;
  size_t uninspectable = 0;  // processes whose fd table could not be read
  bool details_complete = true;
  std::vector<std::string> warnings;
  // What the holder scan could not read although it had the right to (gpureap ran out of file
  // descriptors or memory), each saying what failed, why and what to do. Not empty: holders
  // may be missing whatever the privilege, and the scan is no answer that nothing holds a GPU.
  std::vector<std::string> scan_failures;
  std::vector<Shortage> scan_shortages;  // what those failures ran short of, each kind once
  std::optional<long long> boot_time;    // epoch seconds
  long ticks_per_second = 100;
  bool in_child_pid_namespace = false;
  // The PID namespace its PIDs are in, by its inode (the procfs's self/ns/pid): PIDs and start
  // times of two views compare only within one namespace. Empty where it could not be read.
  std::optional<uint64_t> pid_namespace;
  // The backends whose driver's device nodes the dev root has (DeviceNode::shows_driver: a
  // driver is installed): whether a library that does not load is a problem or the machine
  // simply has no GPU of that vendor.
  std::vector<std::string> driver_device_files;
  // Why some GPU-file holds have no open-file id (kcmp missing or refused, a fixture procfs);
  // empty when every one was compared. Without ids, who keeps which context is a guess.
  std::optional<std::string> open_files_unknown;
  // Processes whose parent the daemon saw fork them and then exit, with that parent (its holder
  // tracker follows holders' forks and every exit): evidence of reparenting that /proc lacks.
  // Empty where nothing followed the forks (a CLI's own scan, a daemon without the connector).
  std::map<pid_t, pid_t> exited_parents;
  // When the daemon first saw each PID the driver lists now, in clock ticks since boot (the unit
  // of ProcessStat::start_ticks), for as long as it stayed listed. A process that started after
  // its PID was first listed is not the listed process: the number was reused. Empty where
  // nothing watched the lists over time (a CLI's own scan).
  std::map<pid_t, uint64_t> listed_since;
  // The start time of the process under each listed number in a /proc view read just after the
  // listing was first seen, where there was one. Start times are 10 ms ticks: one that took the
  // number in the very tick of that sighting does not start after listed_since, but another
  // process than this one under the number came after it all the same. Empty in a CLI's scan.
  std::map<pid_t, uint64_t> listed_first_process;
  // The ends the daemon saw of GPU-file holders, by PID (the latest few of each number), with
  // /proc's word that the thread group was gone. A number names a gone listed process only
  // within that process's life: a group or parent number is kin evidence for a process that
  // started then, not after the number passed to another process. Empty in a CLI's own scan.
  std::map<pid_t, std::vector<ProcessEnd>> ends;
  // The ranks of this view's jobs that the daemon saw end (engine/rank_exits), oldest first.
  // Empty in a CLI's own scan.
  std::vector<RankExit> rank_exits;

  const HostProcess* find(pid_t pid) const;
  // Every process's open files were read: a GPU file no holder was found for has none.
  bool holders_complete() const { return uninspectable == 0 && scan_failures.empty(); }
};

// One GPU's used memory, split the same way in every view (README, "What the memory
// figures mean"): used = attributed + ghost + unattributed.
struct GpuMemorySummary {
  uint64_t attributed_bytes = 0;  // listed for processes that exist (or live in another namespace)
  uint64_t ghost_bytes = 0;       // listed for PIDs that are gone: kept alive or leaked
  uint64_t leaked_bytes = 0;      // the part of ghost_bytes that nothing alive holds
  std::optional<uint64_t> unattributed_bytes;  // used - attributed - ghost, never negative
  size_t ghost_keepers = 0;  // live processes that keep those gone PIDs' contexts alive
};

class Snapshot {
 public:
  std::chrono::system_clock::time_point timestamp;
  std::string hostname;
  DriverReading drivers;  // every backend's status and every GPU, by global index
  ProcView proc;
  std::vector<ProcessRow> rows;  // sorted by pid
  std::vector<Ghost> ghosts;     // sorted by pid; the one ghost verdict every consumer reads
  std::vector<std::string> warnings;
  // Set by a view that shows only some rows (`ps --user`, `--pid`): the snapshot they were
  // chosen from. Every GPU figure (the memory split, the ghosts and their keepers, the footers)
  // is the whole GPU's, whichever rows are shown.
  std::shared_ptr<const Snapshot> whole;
  const Snapshot& figures() const { return whole ? *whole : *this; }

  bool complete() const { return proc.holders_complete() && proc.details_complete; }
  // The join's, the scan's and every backend's warnings, in that order.
  std::vector<std::string> all_warnings() const;
  const HostProcess* find(pid_t pid) const;
  const ProcessRow* row(pid_t pid) const;
  const Ghost* ghost(pid_t pid) const;
  std::optional<std::chrono::system_clock::time_point> start_time(const ProcessStat& st) const;
  GpuMemorySummary memory_summary(const Gpu& gpu) const;
  // The GPU with this global index, if a backend reports it.
  const Gpu* gpu(unsigned index) const { return drivers.gpu(index); }
};

// Joins the two views and derives every row's anomalies.
Snapshot join(ProcView proc, DriverReading drivers, std::string hostname,
              std::chrono::system_clock::time_point now);

}  // namespace gpureap::core
