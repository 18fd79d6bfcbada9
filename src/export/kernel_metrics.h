#pragma once
// The metrics of the kernel log the daemon follows: GPU errors (each vendor's codes) per GPU,
// kind and code.
#include <vector>

#include "export/metrics.h"
#include "export/prometheus_text.h"

namespace gpureap::exporter {

// gpureap_kernel_log_readable, gpureap_gpu_kernel_events_total and
// gpureap_gpu_kernel_last_event_timestamp_seconds{gpu,uuid,pci_bus_id,vendor,kind,code}, and
// for a kind with a metric alias (an earlier release's name) the same counts under it:
// gpureap_<alias>_events_total and gpureap_<alias>_last_event_timestamp_seconds
// {gpu,uuid,pci_bus_id,<alias>}. Nothing without a follower.
void kernel_families(const MetricsInput& in, std::vector<MetricFamily>& out);

}  // namespace gpureap::exporter
