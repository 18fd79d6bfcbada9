#pragma once
// The metrics of the kernel log the daemon follows: GPU errors (each vendor's codes) per GPU and
// code.
#include <vector>

#include "export/metrics.h"
#include "export/prometheus_text.h"

namespace gpureap::exporter {

// gpureap_kernel_log_readable, gpureap_xid_events_total{gpu,uuid,xid} and
// gpureap_xid_last_event_timestamp_seconds{gpu,uuid,xid}; nothing without a follower.
void kernel_families(const MetricsInput& in, std::vector<MetricFamily>& out);

}  // namespace gpureap::exporter
