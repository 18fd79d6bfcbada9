#pragma once
// The names of the metrics gpureap serves on /metrics, and of the labels their readers use: one
// table that the writers (export, and the daemon's policies, alerts and audit log) write from
// and the cluster view queries by, below both. A metric renamed here is renamed for both, so
// the cluster view cannot go on asking Prometheus for the old name; the shipped dashboard and
// alert rules are checked against what the exporter writes (test_export_deploy_files), and the
// cluster's queries against this table and the exporter (test_metric_names).
//
// The names are an interface: dashboards and alert rules outside gpureap use them. Renaming one
// keeps the old name as a documented alias for a release (as the kernel-event metrics do).
#include <string_view>

namespace gpureap::metric {

// ---- Of the daemon's sample ----
inline constexpr const char* kUp = "gpureap_up";
inline constexpr const char* kBackendUp = "gpureap_backend_up";
inline constexpr const char* kSampleTimestamp = "gpureap_sample_timestamp_seconds";
inline constexpr const char* kCollectDuration = "gpureap_collect_duration_seconds";
inline constexpr const char* kCollectErrors = "gpureap_collect_errors_total";
inline constexpr const char* kFindings = "gpureap_findings";

// ---- Per GPU ----
inline constexpr const char* kGpuInfo = "gpureap_gpu_info";
inline constexpr const char* kGpuMemoryTotal = "gpureap_gpu_memory_total_bytes";
inline constexpr const char* kGpuMemoryUsed = "gpureap_gpu_memory_used_bytes";
inline constexpr const char* kGpuMemoryReserved = "gpureap_gpu_memory_reserved_bytes";
inline constexpr const char* kGpuMemoryUnattributed = "gpureap_gpu_memory_unattributed_bytes";
inline constexpr const char* kGpuMemoryGhost = "gpureap_gpu_memory_ghost_bytes";
inline constexpr const char* kGpuUtilization = "gpureap_gpu_utilization_ratio";
inline constexpr const char* kGpuTemperature = "gpureap_gpu_temperature_celsius";
inline constexpr const char* kGpuPower = "gpureap_gpu_power_watts";
inline constexpr const char* kGpuProcesses = "gpureap_gpu_processes";
inline constexpr const char* kGpuInstanceInfo = "gpureap_gpu_instance_info";
inline constexpr const char* kGpuInstanceMemoryTotal = "gpureap_gpu_instance_memory_total_bytes";
inline constexpr const char* kGpuInstanceMemoryUsed = "gpureap_gpu_instance_memory_used_bytes";
inline constexpr const char* kServerClients = "gpureap_server_clients";

// ---- Per owner and process ----
inline constexpr const char* kUserMemory = "gpureap_user_memory_bytes";
inline constexpr const char* kContainerMemory = "gpureap_container_memory_bytes";
inline constexpr const char* kProcessMemory = "gpureap_process_memory_bytes";
inline constexpr const char* kProblemProcessMemory = "gpureap_problem_process_memory_bytes";
inline constexpr const char* kJobRanks = "gpureap_job_ranks";
inline constexpr const char* kJobMemory = "gpureap_job_memory_bytes";
inline constexpr const char* kStalledJobMemory = "gpureap_stalled_job_memory_bytes";

// ---- GPU errors of the kernel log ----
inline constexpr const char* kKernelLogReadable = "gpureap_kernel_log_readable";
inline constexpr const char* kGpuKernelEvents = "gpureap_gpu_kernel_events_total";
inline constexpr const char* kGpuKernelLastEvent =
    "gpureap_gpu_kernel_last_event_timestamp_seconds";

// ---- How the daemon finds its holders ----
inline constexpr const char* kHolderTrackingMode = "gpureap_holder_tracking_mode";
inline constexpr const char* kHolderOpens = "gpureap_holder_opens_total";
inline constexpr const char* kHolderCloses = "gpureap_holder_closes_total";
inline constexpr const char* kHolderForks = "gpureap_holder_forks_total";
inline constexpr const char* kHolderEventOverflows = "gpureap_holder_event_overflows_total";
inline constexpr const char* kHolderTrackingDrift = "gpureap_holder_tracking_drift_total";

// ---- Of the daemon's actions ----
inline constexpr const char* kPolicyActions = "gpureap_policy_actions_total";
inline constexpr const char* kPolicyMatchingProcesses = "gpureap_policy_matching_processes";
inline constexpr const char* kAlertsSent = "gpureap_alerts_sent_total";
inline constexpr const char* kAlertsFiring = "gpureap_alerts_firing";
inline constexpr const char* kAuditRecords = "gpureap_audit_records_total";
inline constexpr const char* kAuditWriteErrors = "gpureap_audit_write_errors_total";
inline constexpr const char* kAuditRecordsDropped = "gpureap_audit_records_dropped_total";
inline constexpr const char* kAuditPendingRecords = "gpureap_audit_pending_records";

// Every name above, for the tests that hold writers and readers to the table.
inline constexpr std::string_view kAll[] = {
    kUp,
    kBackendUp,
    kSampleTimestamp,
    kCollectDuration,
    kCollectErrors,
    kFindings,
    kGpuInfo,
    kGpuMemoryTotal,
    kGpuMemoryUsed,
    kGpuMemoryReserved,
    kGpuMemoryUnattributed,
    kGpuMemoryGhost,
    kGpuUtilization,
    kGpuTemperature,
    kGpuPower,
    kGpuProcesses,
    kGpuInstanceInfo,
    kGpuInstanceMemoryTotal,
    kGpuInstanceMemoryUsed,
    kServerClients,
    kUserMemory,
    kContainerMemory,
    kProcessMemory,
    kProblemProcessMemory,
    kJobRanks,
    kJobMemory,
    kStalledJobMemory,
    kKernelLogReadable,
    kGpuKernelEvents,
    kGpuKernelLastEvent,
    kHolderTrackingMode,
    kHolderOpens,
    kHolderCloses,
    kHolderForks,
    kHolderEventOverflows,
    kHolderTrackingDrift,
    kPolicyActions,
    kPolicyMatchingProcesses,
    kAlertsSent,
    kAlertsFiring,
    kAuditRecords,
    kAuditWriteErrors,
    kAuditRecordsDropped,
    kAuditPendingRecords,
};

// The labels that readers of the metrics select or group by (the cluster view, the shipped
// alert rules), as the writers set them.
namespace label {
inline constexpr const char* kGpu = "gpu";
inline constexpr const char* kUuid = "uuid";
inline constexpr const char* kPciBusId = "pci_bus_id";
inline constexpr const char* kVendor = "vendor";
inline constexpr const char* kKind = "kind";
inline constexpr const char* kCode = "code";
inline constexpr const char* kPid = "pid";
inline constexpr const char* kProblem = "problem";
inline constexpr const char* kKeepers = "keepers";
inline constexpr const char* kComm = "comm";
inline constexpr const char* kUser = "user";
inline constexpr const char* kPodNamespace = "pod_namespace";
inline constexpr const char* kPodName = "pod_name";
inline constexpr const char* kGpuInstance = "gpu_instance";
inline constexpr const char* kRunId = "run_id";
inline constexpr const char* kState = "state";
inline constexpr const char* kMode = "mode";
}  // namespace label

}  // namespace gpureap::metric
