#pragma once
// The metrics of distributed jobs (core/distributed_job.h): how many of each job's ranks live on
// this node and how many are gone, the memory they hold, and the memory of a stalled job (doctor's
// stalled-job). The run id label is the launcher's TORCHELASTIC_RUN_ID, a claim its user writes: a
// cluster view joins the nodes' series on it to show a job, and never acts on it.
#include <vector>

#include "export/metrics.h"
#include "export/prometheus_text.h"

namespace gpureap::exporter {

// gpureap_job_ranks{launcher_pid,user,kind,run_id,state="live"|"gone"}: one pair per job of the
// node; gpureap_job_memory_bytes{launcher_pid,user,kind,run_id}: the memory its live ranks hold;
// gpureap_stalled_job_memory_bytes{launcher_pid,user,kind,run_id,severity}: the memory
// the live ranks of a stalled job hold, one series per stalled job while it lasts.
void job_families(const MetricsInput& in, std::vector<MetricFamily>& out);

}  // namespace gpureap::exporter
