#pragma once
// The daemon's metrics, built from one sample: the snapshot, doctor's findings over it and
// the collectors' own figures. Pure: the same input always gives the same families, so every
// value can be checked in a unit test. Names and labels are the public interface (dashboards
// and alert rules depend on them): add, never rename.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/kernel_event.h"
#include "core/snapshot.h"
#include "doctor/finding.h"
#include "export/prometheus_text.h"

namespace gpureap::exporter {

// One collector's figures: `driver` (the GPU backend) and `holder_scan` (/proc).
struct CollectorFigures {
  std::string name;
  std::optional<double> last_duration_seconds;  // empty until it has run once
  uint64_t errors_total = 0;
};

struct MetricsInput {
  const core::Snapshot& snapshot;
  const std::vector<doctor::Finding>& findings;
  std::vector<CollectorFigures> collectors;
  // gpureap_process_memory_bytes: one series per process, so off by default (PIDs churn and
  // every new PID is a new series in Prometheus).
  bool per_process = false;
  // The daemon's kernel-log follower: every GPU error it saw, counted per GPU, kind and code.
  // Null: no kernel-log metrics (the log is not followed).
  const std::vector<core::KernelEventCount>* kernel_events = nullptr;
  bool kernel_log_readable = false;
};

std::vector<MetricFamily> build_metrics(const MetricsInput& input);

}  // namespace gpureap::exporter
