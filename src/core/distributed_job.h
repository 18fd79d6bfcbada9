#pragma once
// A distributed job on this node, as the kernel vouches for it: a launcher process (torchrun's
// agent, mp.spawn's parent, a hand-written or Slurm-style launcher) and its ranks, the children
// of one launcher that open the GPU themselves, run by the launcher's user, started after it,
// in its process group. A process's environment (core/rank_labels.h) only labels a rank that
// belongs by that ancestry: it never makes a process part of a job.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::core {

struct JobRank {
  pid_t pid = 0;
  std::optional<unsigned> local_rank;  // its LOCAL_RANK label
  bool holds_gpu = false;              // opened a GPU file itself (a labelled sibling may not)
};

// A rank number of the job whose end the kernel vouches for: a process that an earlier view
// showed as this launcher's rank labelled with that number (its PID and start time, under this
// life of the launcher) is gone or a zombie now, and no live rank has the number.
struct EndedRank {
  unsigned local_rank = 0;
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  // The earlier view of distributed_jobs() showed it live and this view shows it a zombie: it
  // ended between the two, and its launcher has not reaped it, so has not started it again.
  // Else the daemon's record (engine/rank_exits) says it ended, at any time.
  bool between_views = false;
};

// An exited child of the launcher that it has not reaped, run by the launcher's user (the
// kernel's uid, read from the zombie's status) in its process group, whose wait status (the one
// the kernel keeps for the launcher) says it failed: killed by a signal, or exited nonzero. The
// kernel's word that a process of the job failed, though not which rank it was: a zombie keeps
// no environment, so no LOCAL_RANK, and a rank's number no live rank has says which is gone.
struct FailedChild {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  int wait_status = 0;
};

struct DistributedJob {
  pid_t launcher = 0;
  uint64_t launcher_start_ticks = 0;
  std::optional<uid_t> uid;
  // What launched it, from the launcher's and the ranks' command lines (a label): "torchrun",
  // "mp.spawn", "deepspeed", "accelerate", "mpirun", "srun", else the launcher's own name.
  std::string kind;
  std::vector<JobRank> ranks;  // live, by PID
  // The launcher's children that exited and that it has not reaped (zombies), known to have
  // been its ranks: the daemon watched them as ranks, or the earlier view showed them so.
  std::vector<pid_t> exited;
  // Its zombie children that failed (FailedChild), by PID: ranks known as such or not.
  std::vector<FailedChild> failed;
  // Its other zombie children, but for another user's and those that failed. A zombie keeps its
  // PID, start time, uid, group and wait status but no environment and no open file: nothing the
  // kernel keeps of it says that it was a rank rather than a program the launcher ran and has not
  // reaped (a helper such as nvidia-smi, a process reparented to a launcher that is a PID
  // namespace's init). One that exited 0, or whose uid or status could not be read, is a doubt,
  // never a rank's end.
  std::vector<pid_t> unreaped;
  std::optional<unsigned> local_world_size;  // the ranks' LOCAL_WORLD_SIZE, when they agree
  std::vector<unsigned> missing;             // local rank numbers below it no live rank has
  // The missing numbers whose rank the kernel's word says ended (one entry a number). Labels
  // alone name a rank number no live rank has; a rank that has yet to start, or one of the
  // job's ranks under another launcher (a second container), is missing from them as well, and
  // an unreaped zombie may be anyone's helper.
  std::vector<EndedRank> ended;
  std::optional<std::string> run_id;  // TORCHELASTIC_RUN_ID (a label)
  // torchrun's agent watches its ranks and, on a rank's exit, restarts them all (restarts
  // left) or ends them all: set when the ranks carry its restart labels.
  bool elastic_agent = false;
  std::optional<unsigned> restarts_left;
  std::vector<pid_t> members;  // the launcher and every live descendant of its user, by PID

  const JobRank* rank_with(unsigned local_rank) const;
  const EndedRank* ended_rank(unsigned local_rank) const;
  // A rank number is missing while some rank lives, that rank is known to have ended or a
  // process of the job failed (`failed`), and no agent of its own restarts or ends the ranks
  // (torchrun's: its labels): the live ranks wait for the gone one.
  bool stalled() const;
};

// Who runs it, for people and labels: the launcher's user name, else "uid N", else "unknown".
std::string job_user(const ProcView& view, const DistributedJob& job);

// Every distributed job of the view: a launcher with two ranks or more, or with one rank
// labelled as one of several on this node. By launcher PID. `earlier`, a view of the same
// machine taken before (doctor's first sample), shows which of the launchers' zombie children
// were ranks; the view's own `rank_exits` (the daemon's records) say so too. Which of them
// failed is each zombie's own wait status and uid, in this view.
std::vector<DistributedJob> distributed_jobs(const ProcView& view,
                                             const ProcView* earlier = nullptr);

}  // namespace gpureap::core
