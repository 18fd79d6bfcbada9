#include "export/job_metrics.h"

#include "core/distributed_job.h"
#include "doctor/finding_code.h"
#include "metric/names.h"

namespace gpureap::exporter {
namespace {

std::vector<Label> job_labels(const core::Snapshot& s, const core::DistributedJob& job) {
  return {{"launcher_pid", std::to_string(job.launcher)},
          {metric::label::kUser, core::job_user(s.proc, job)},
          {metric::label::kKind, job.kind},
          {metric::label::kRunId, job.run_id.value_or("")}};
}

}  // namespace

void job_families(const MetricsInput& in, std::vector<MetricFamily>& out) {
  const auto& s = in.snapshot;
  MetricFamily ranks{metric::kJobRanks,
                     "Ranks of a distributed job on this node: live, and gone (a rank number "
                     "below the ranks' LOCAL_WORLD_SIZE that no live rank has); run_id is the "
                     "launcher's TORCHELASTIC_RUN_ID, a label its user sets"};
  MetricFamily memory{metric::kJobMemory,
                      "GPU memory the driver lists for the live ranks of a distributed job on "
                      "this node (a cluster view sums it by run_id across nodes)"};
  MetricFamily stalled{metric::kStalledJobMemory,
                       "GPU memory the live ranks of a distributed job hold while one of its "
                       "ranks is gone (doctor's stalled-job), by the finding's severity; one "
                       "series per stalled job while it lasts"};
  const auto jobs = core::distributed_jobs(s.proc);
  for (const auto& job : jobs) {
    auto labels = job_labels(s, job);
    auto live = labels, gone = labels;
    live.push_back({metric::label::kState, "live"});
    gone.push_back({metric::label::kState, "gone"});
    ranks.add(std::move(live), static_cast<double>(job.ranks.size()));
    ranks.add(std::move(gone), static_cast<double>(job.missing.size()));
    uint64_t held = 0;
    for (const auto& r : job.ranks)
      if (const auto* row = s.row(r.pid)) held += row->listed_bytes();
    memory.add(std::move(labels), static_cast<double>(held));
  }
  for (const auto& f : in.findings) {
    if (f.code != doctor::FindingCode::StalledJob || f.pids.empty()) continue;
    for (const auto& job : jobs)
      if (job.launcher == f.pids.front()) {
        auto labels = job_labels(s, job);
        labels.push_back({"severity", doctor::to_string(f.severity)});
        stalled.add(std::move(labels), static_cast<double>(f.memory_bytes));
      }
  }
  out.push_back(std::move(ranks));
  out.push_back(std::move(memory));
  out.push_back(std::move(stalled));
}

}  // namespace gpureap::exporter
