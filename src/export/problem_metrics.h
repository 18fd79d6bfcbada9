#pragma once
// The metrics a cluster view (`gpureap cluster`) needs to name what to do on a node without
// asking the node: the processes behind a GPU's problem memory, by PID, and when the sample
// was taken. Small by construction: one series per gone PID and per stopped or D-state
// process the driver lists, only while it lasts, so a healthy node adds none.
#include <vector>

#include "export/metrics.h"
#include "export/prometheus_text.h"

namespace gpureap::exporter {

// At most this many keepers are named in a ghost's `keepers` label; past it the label ends in
// "+N" (how many more), so a ghost kept by hundreds of workers stays one short series.
inline constexpr size_t kMaxKeepersLabelled = 16;

// gpureap_sample_timestamp_seconds, and
// gpureap_problem_process_memory_bytes{gpu,uuid,pci_bus_id,vendor,pid,problem,keepers,comm,user,
// pod_namespace,pod_name} with problem one of ghost (gone, its context kept by `keepers`),
// leaked (gone, nothing alive holds it), stopped, uninterruptible; the value is the memory the
// driver lists for the PID on that GPU.
void problem_families(const MetricsInput& in, std::vector<MetricFamily>& out);

}  // namespace gpureap::exporter
