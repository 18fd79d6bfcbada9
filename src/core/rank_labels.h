#pragma once
// What a distributed job's launcher writes into each rank's environment (torchrun's agent sets
// all of these; a hand-written or Slurm-style launcher often sets the first four). The
// environment is its owner's to write: these label a process that already belongs to a job by
// the kernel's word (core/distributed_job.h), and never make one belong.
#include <optional>
#include <string>

namespace gpureap::core {

struct RankLabels {
  std::optional<unsigned> rank;              // RANK: across the whole job
  std::optional<unsigned> local_rank;        // LOCAL_RANK: on this node
  std::optional<unsigned> world_size;        // WORLD_SIZE
  std::optional<unsigned> local_world_size;  // LOCAL_WORLD_SIZE: ranks on this node
  std::optional<std::string> run_id;         // TORCHELASTIC_RUN_ID: the job across nodes
  // TORCHELASTIC_RESTART_COUNT and TORCHELASTIC_MAX_RESTARTS: torchrun restarts every rank of
  // the node while restarts are left.
  std::optional<unsigned> restart_count;
  std::optional<unsigned> max_restarts;
  bool operator==(const RankLabels&) const = default;
};

}  // namespace gpureap::core
