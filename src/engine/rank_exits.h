#pragma once
// Which ranks of a distributed job (core/distributed_job.h) ended while their launcher lived,
// as one view to the next shows it: a rank of a job in one view that the next shows gone, a
// zombie, or another process under its number. A one-shot scan sees only that a rank number
// is missing; the daemon saw it go, and can say when and how (the wait status a zombie rank
// leaves in /proc until its launcher reaps it). Each life's end is recorded once, dated when it
// was first seen. Records are kept while their launcher lives.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "core/listed_sightings.h"
#include "core/snapshot.h"

namespace gpureap::engine {

class RankExits {
 public:
  // A zombie's wait status (procfs::ProcFs::read_exit_status).
  using ReadStatus = std::function<std::optional<int>(pid_t)>;

  // `view` at `now_ticks` since boot. Its `ends` (the events' exact end times and wait statuses)
  // date an end, and say how it ended, where they know it.
  void observe(const core::ProcView& view, uint64_t now_ticks, const ReadStatus& read_status);

  const std::vector<core::RankExit>& exits() const { return exits_; }
  // Before the first view: a previous run's records and the ranks it watched
  // (core::CarriedSightings). The first view drops the records whose launcher is gone, as it
  // drops any, and records each watched rank it shows gone as ended by then.
  void carry_over(std::vector<core::RankExit> exits,
                  const std::vector<core::CarriedSightings::WatchedRank>& watched);
  // The ranks watched after the last view, for the next run.
  std::vector<core::CarriedSightings::WatchedRank> watched() const;

  // A job that loses ranks for ever (a launcher that restarts them in a loop) keeps at most
  // this many of their records, the latest.
  static constexpr size_t kMaxKept = 1024;

 private:
  using Watched = core::CarriedSightings::WatchedRank;
  std::map<pid_t, Watched> watched_;  // the last view's ranks, and those still ending
  std::vector<core::RankExit> exits_;
};

}  // namespace gpureap::engine
