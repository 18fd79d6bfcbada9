#pragma once
// What a watcher of the driver's lists (the node's daemon) knows of the PIDs listed now, that
// a command's own single look cannot: when each listing was first seen, the process under its
// number then, and the ends of the numbers' GPU-file holders (core::ProcView's listed_since,
// listed_first_process and ends). A command that plans signals from its own scan takes them
// on, so that a process that took a gone job's number is the newcomer it is to the daemon, and
// `gpureap kill` and `doctor --fix` decide as a policy would. The ends deny kin the daemon would
// deny; the forks it saw (ProcView::exited_parents) grant what it would grant, and are taken
// only for a process that is the same one (by start time) in both views.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/snapshot.h"

namespace gpureap::core {

struct ListedSightings {
  std::optional<long long> boot_time;     // of the view they came from (ProcView::boot_time)
  std::optional<uint64_t> pid_namespace;  // ProcView::pid_namespace
  std::map<pid_t, uint64_t> since, first_process;
  std::map<pid_t, std::vector<ProcessEnd>> ends;
  struct Fork {
    pid_t parent = 0;
    uint64_t child_start = 0;
    bool operator==(const Fork&) const = default;
  };
  std::map<pid_t, Fork> forks;  // ProcView::exited_parents, by child, with the child's start
};

// What the daemon hands to its next run on the same boot (daemon/sightings_file.h): a restart
// forgets nothing the last run had seen of the listings and their numbers' lives, so a process
// that took a gone job's number before the restart stays the newcomer it was. The new run
// dates a first sighting from the GPUs' last reading (last_read), as the last run would have.
struct CarriedSightings {
  std::string boot_id;                    // /proc/sys/kernel/random/boot_id
  std::optional<uint64_t> pid_namespace;  // ProcView::pid_namespace
  // When the reading these come from returned, in boot ticks: how old they are.
  uint64_t saved_at_ticks = 0;
  struct Listing {
    pid_t pid = 0;
    uint64_t since = 0;                     // ProcView::listed_since
    std::optional<uint64_t> first_process;  // ProcView::listed_first_process
    std::vector<std::string> gpus;          // the GPUs (Gpu::key) that listed it last
    bool operator==(const Listing&) const = default;
  };
  std::vector<Listing> listings;
  std::map<std::string, uint64_t> last_read;      // when each GPU's process lists were last read
  std::map<pid_t, std::vector<ProcessEnd>> ends;  // the listed numbers' lives that ended
  std::map<pid_t, ListedSightings::Fork> forks;   // ProcView::exited_parents, with the start
  std::vector<RankExit> rank_exits;               // ProcView::rank_exits
  // The jobs' ranks the last run watched (engine/rank_exits): one that the next run's first
  // view shows gone ended while no daemon ran, and is recorded as ended by then.
  struct WatchedRank {
    pid_t pid = 0;
    uint64_t start_ticks = 0;
    pid_t launcher = 0;
    uint64_t launcher_start_ticks = 0;
    std::optional<unsigned> local_rank;  // its LOCAL_RANK label
    bool operator==(const WatchedRank&) const = default;
  };
  std::vector<WatchedRank> watched_ranks;
  bool operator==(const CarriedSightings&) const = default;
};

// The sightings `view` carries (a daemon's snapshot).
ListedSightings sightings_of(const ProcView& view);
// Its exited_parents, each with the child's start where `view` shows the child (the forks of
// both documents above).
std::map<pid_t, ListedSightings::Fork> forks_of(const ProcView& view);

// Why `sightings` cannot speak of `view`, empty when they can: boot ticks and PIDs compare
// only within one boot of one kernel, seen from the same PID namespace.
std::optional<std::string> sightings_mismatch(const ListedSightings& sightings,
                                              const ProcView& view);

// Takes on `sightings` for the PIDs `drivers` lists (every other PID's are no evidence now)
// where `view` lacks its own, and the forks of those PIDs whose child `view` shows with the same
// start; a no-op when sightings_mismatch says why not.
void adopt_sightings(ProcView& view, const DriverReading& drivers,
                     const ListedSightings& sightings);

}  // namespace gpureap::core
