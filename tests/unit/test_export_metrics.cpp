#include <gtest/gtest.h>

#include <set>

#include "core/row_labels.h"
#include "export/metrics.h"
#include "snapshot_builders.h"

namespace gpureap::exporter {
namespace {

using namespace gpureap::testing;

// The value of the sample of `name` whose labels include every one of `want`.
std::optional<double> value_of(const std::vector<MetricFamily>& families, const std::string& name,
                               const std::vector<Label>& want = {}) {
  for (const auto& f : families) {
    if (f.name != name) continue;
    for (const auto& s : f.samples) {
      bool all = true;
      for (const auto& w : want) {
        bool found = false;
        for (const auto& l : s.labels) found |= l.name == w.name && l.value == w.value;
        all &= found;
      }
      if (all) return s.value;
    }
  }
  return std::nullopt;
}

const MetricFamily* family(const std::vector<MetricFamily>& families, const std::string& name) {
  for (const auto& f : families)
    if (f.name == name) return &f;
  return nullptr;
}

core::Gpu named_gpu(unsigned index, unsigned minor, uint64_t used,
                    std::vector<core::DriverProcess> procs) {
  auto g = gpu(index, minor, used, std::move(procs));
  g.uuid = "GPU-" + std::to_string(index);
  g.pci_bus_id = "00000000:1" + std::to_string(index) + ":00.0";
  g.memory.reserved_bytes = 512 * MiB;
  g.utilization_percent = 87;
  g.temperature_celsius = 61;
  g.power_watts = 512.5;
  return g;
}

// alice's job, PID 200, in her pod's container (verified).
core::HostProcess alices_job() {
  auto alice = holder(200, 1, 200);
  alice.details->user = "alice";
  alice.details->container =
      core::ContainerInfo{"kubernetes", "c0ffee", "pod-1", "train", "bert-0", "research"};
  alice.details->container->verified = true;
  return alice;
}

// GPU 0: a healthy job (alice, 20 GiB) in a container, a gone trainer (8 GiB) kept alive by an
// orphaned worker, and 1 GiB nobody is listed for. GPU 1: a stopped job of bob.
core::Snapshot fleet() {
  auto alice = alices_job();
  auto worker = holder(301, 1, 300);
  worker.details->user = "alice";
  auto bob = holder(400, 1, 400, 1, 'T');
  bob.details->user = "bob";
  auto s = make_snapshot({proc(1, 0, 1), alice, worker, bob},
                         {named_gpu(0, 0, 29 * GiB, {listed(200, 20 * GiB), listed(300, 8 * GiB)}),
                          named_gpu(1, 1, 4 * GiB, {listed(400, 4 * GiB)})});
  s.drivers.backends.at(0).driver_version = "550.54.15";
  return s;
}

TEST(ExportMetrics, GpuValuesInBaseUnitsWithGpuAndUuidLabels) {
  auto s = fleet();
  std::vector<doctor::Finding> findings;
  auto m = build_metrics({s, findings, {}, false});
  EXPECT_EQ(value_of(m, "gpureap_up"), 1);
  EXPECT_EQ(value_of(m, "gpureap_gpu_info",
                     {{"gpu", "0"},
                      {"uuid", "GPU-0"},
                      {"name", "Test GPU"},
                      {"pci_bus_id", "00000000:10:00.0"},
                      {"driver_version", "550.54.15"}}),
            1);
  EXPECT_EQ(value_of(m, "gpureap_gpu_memory_total_bytes", {{"gpu", "0"}, {"uuid", "GPU-0"}}),
            100.0 * GiB);
  EXPECT_EQ(value_of(m, "gpureap_gpu_memory_used_bytes", {{"gpu", "0"}}), 29.0 * GiB);
  EXPECT_EQ(value_of(m, "gpureap_gpu_memory_reserved_bytes", {{"gpu", "0"}}), 512.0 * MiB);
  EXPECT_EQ(value_of(m, "gpureap_gpu_memory_unattributed_bytes", {{"gpu", "0"}}), 1.0 * GiB);
  EXPECT_EQ(value_of(m, "gpureap_gpu_memory_ghost_bytes", {{"gpu", "0"}}), 8.0 * GiB);
  EXPECT_EQ(value_of(m, "gpureap_gpu_memory_ghost_bytes", {{"gpu", "1"}}), 0);
  EXPECT_DOUBLE_EQ(*value_of(m, "gpureap_gpu_utilization_ratio", {{"gpu", "0"}}), 0.87);
  EXPECT_EQ(value_of(m, "gpureap_gpu_temperature_celsius", {{"gpu", "1"}}), 61);
  EXPECT_EQ(value_of(m, "gpureap_gpu_power_watts", {{"gpu", "1"}}), 512.5);
}

TEST(ExportMetrics, ProcessesCountedByAnomalyWithZerosForTheAbsentOnes) {
  auto s = fleet();
  std::vector<doctor::Finding> findings;
  auto m = build_metrics({s, findings, {}, false});
  auto procs = [&](const char* gpu, const char* anomaly) {
    return value_of(m, "gpureap_gpu_processes", {{"gpu", gpu}, {"anomaly", anomaly}});
  };
  EXPECT_EQ(procs("0", "none"), 1);              // alice's job
  EXPECT_EQ(procs("0", "no-such-process"), 1);   // the gone trainer
  EXPECT_EQ(procs("0", "inherited-holder"), 1);  // its worker, unlisted but holding GPU 0
  EXPECT_EQ(procs("0", "orphan"), 1);            // the same worker
  EXPECT_EQ(procs("0", "stopped"), 0);
  EXPECT_EQ(procs("1", "stopped"), 1);
  EXPECT_EQ(procs("1", "none"), 0);
  EXPECT_EQ(procs("1", "leaked"), 0);
}

TEST(ExportMetrics, MemoryByUserAndByContainer) {
  auto s = fleet();
  std::vector<doctor::Finding> findings;
  auto m = build_metrics({s, findings, {}, false});
  EXPECT_EQ(value_of(m, "gpureap_user_memory_bytes", {{"gpu", "0"}, {"user", "alice"}}),
            20.0 * GiB);
  // The gone trainer's user cannot be known.
  EXPECT_EQ(value_of(m, "gpureap_user_memory_bytes", {{"gpu", "0"}, {"user", "unknown"}}),
            8.0 * GiB);
  EXPECT_EQ(value_of(m, "gpureap_user_memory_bytes", {{"gpu", "1"}, {"user", "bob"}}), 4.0 * GiB);
  EXPECT_EQ(value_of(m, "gpureap_container_memory_bytes",
                     {{"gpu", "0"},
                      {"uuid", "GPU-0"},
                      {"container", "c0ffee"},
                      {"container_name", "train"},
                      {"pod_name", "bert-0"},
                      {"pod_namespace", "research"},
                      {"pod_uid", "pod-1"}}),
            20.0 * GiB);
  ASSERT_NE(family(m, "gpureap_container_memory_bytes"), nullptr);
  EXPECT_EQ(family(m, "gpureap_container_memory_bytes")->samples.size(), 1u);
}

TEST(ExportMetrics, PerProcessSeriesOnlyWhenAskedFor) {
  auto s = fleet();
  std::vector<doctor::Finding> findings;
  auto off = build_metrics({s, findings, {}, false});
  EXPECT_EQ(family(off, "gpureap_process_memory_bytes"), nullptr);
  auto on = build_metrics({s, findings, {}, true});
  EXPECT_EQ(value_of(on, "gpureap_process_memory_bytes",
                     {{"gpu", "0"},
                      {"pid", "200"},
                      {"user", "alice"},
                      {"comm", "p200"},
                      {"container", "c0ffee"},
                      {"container_name", "train"},
                      {"pod_name", "bert-0"},
                      {"pod_namespace", "research"},
                      {"pod_uid", "pod-1"}}),
            20.0 * GiB);
  // Outside a pod the label is empty, so PromQL joins with kube_pod_info on it only for pods.
  EXPECT_EQ(value_of(on, "gpureap_process_memory_bytes",
                     {{"pid", "300"},
                      {"user", "unknown"},
                      {"container", ""},
                      {"container_name", ""},
                      {"pod_name", ""},
                      {"pod_namespace", ""},
                      {"pod_uid", ""}}),
            8.0 * GiB);
  EXPECT_EQ(family(on, "gpureap_process_memory_bytes")->samples.size(), 3u);
}

TEST(ExportMetrics, AnUnverifiedContainerClaimIsChargedToNoContainerOrPod) {
  // mallory's cgroup claims alice's container; even were its names filled in, nothing of the
  // claim becomes a label.
  auto alice = alices_job();
  auto mallory = holder(500, 1, 500);
  mallory.details->user = "mallory";
  mallory.details->container = alice.details->container;
  mallory.details->container->verified = false;
  auto s =
      make_snapshot({proc(1, 0, 1), alice, mallory},
                    {named_gpu(0, 0, 24 * GiB, {listed(200, 20 * GiB), listed(500, 4 * GiB)})});
  std::vector<doctor::Finding> findings;
  auto m = build_metrics({s, findings, {}, true});
  ASSERT_NE(family(m, "gpureap_container_memory_bytes"), nullptr);
  ASSERT_EQ(family(m, "gpureap_container_memory_bytes")->samples.size(), 1u);
  EXPECT_EQ(value_of(m, "gpureap_container_memory_bytes",
                     {{"container", "c0ffee"}, {"pod_name", "bert-0"}, {"pod_uid", "pod-1"}}),
            20.0 * GiB);
  EXPECT_EQ(value_of(m, "gpureap_process_memory_bytes",
                     {{"pid", "500"},
                      {"user", "mallory"},
                      {"container", ""},
                      {"container_name", ""},
                      {"pod_name", ""},
                      {"pod_namespace", ""},
                      {"pod_uid", ""}}),
            4.0 * GiB);
  EXPECT_EQ(core::container_label(*s.row(500)), "");
  EXPECT_EQ(core::container_label(*s.row(200)), "c0ffee");
}

TEST(ExportMetrics, UnknownValuesAreLeftOutNotZero) {
  core::Gpu g;
  g.index = 0;
  g.uuid = "GPU-x";
  auto s = make_snapshot({proc(1, 0, 1)}, {g});
  std::vector<doctor::Finding> findings;
  auto m = build_metrics({s, findings, {}, false});
  EXPECT_EQ(value_of(m, "gpureap_gpu_info", {{"gpu", "0"}, {"name", ""}}), 1);
  for (const char* name : {"gpureap_gpu_memory_total_bytes", "gpureap_gpu_memory_used_bytes",
                           "gpureap_gpu_memory_unattributed_bytes", "gpureap_gpu_utilization_ratio",
                           "gpureap_gpu_temperature_celsius", "gpureap_gpu_power_watts"}) {
    ASSERT_NE(family(m, name), nullptr) << name;  // HELP and TYPE stay
    EXPECT_TRUE(family(m, name)->samples.empty()) << name;
  }
}

TEST(ExportMetrics, DownBackendIsUpZeroWithNoGpuSeries) {
  core::ProcView v;
  core::BackendReport b;
  b.available = false;
  b.error = "the GPU driver did not answer";
  auto s = core::join(v, core::combine({b}), "host", std::chrono::system_clock::now());
  std::vector<doctor::Finding> findings;
  auto m =
      build_metrics({s, findings, {{"driver", 5.0, 3}, {"holder_scan", std::nullopt, 0}}, false});
  EXPECT_EQ(value_of(m, "gpureap_up"), 0);
  EXPECT_TRUE(family(m, "gpureap_gpu_memory_used_bytes")->samples.empty());
  EXPECT_EQ(value_of(m, "gpureap_collect_duration_seconds", {{"collector", "driver"}}), 5.0);
  EXPECT_EQ(value_of(m, "gpureap_collect_duration_seconds", {{"collector", "holder_scan"}}),
            std::nullopt);
  EXPECT_EQ(value_of(m, "gpureap_collect_errors_total", {{"collector", "driver"}}), 3);
  EXPECT_EQ(value_of(m, "gpureap_collect_errors_total", {{"collector", "holder_scan"}}), 0);
  EXPECT_EQ(family(m, "gpureap_collect_errors_total")->type, MetricType::Counter);
}

TEST(ExportMetrics, FindingsCountedByCodeAndSeverity) {
  auto s = fleet();
  std::vector<doctor::Finding> findings = {
      {doctor::FindingCode::NoSuchProcess, doctor::Severity::Critical},
      {doctor::FindingCode::StoppedHolder, doctor::Severity::Warning},
      {doctor::FindingCode::StoppedHolder, doctor::Severity::Warning}};
  auto m = build_metrics({s, findings, {}, false});
  EXPECT_EQ(
      value_of(m, "gpureap_findings", {{"code", "no-such-process"}, {"severity", "critical"}}), 1);
  EXPECT_EQ(value_of(m, "gpureap_findings", {{"code", "stopped-holder"}, {"severity", "warning"}}),
            2);
  // A ghost's keeper that is an orphan is a facet of its finding: its code still counts.
  findings[0].facets = {
      {doctor::FindingCode::OrphanHolder, 4250, doctor::Severity::Warning, "an orphan"},
      {doctor::FindingCode::InheritedHolder, 4250, doctor::Severity::Warning, "inherited"}};
  auto merged = build_metrics({s, findings, {}, false});
  EXPECT_EQ(
      value_of(merged, "gpureap_findings", {{"code", "no-such-process"}, {"severity", "critical"}}),
      1);
  EXPECT_EQ(
      value_of(merged, "gpureap_findings", {{"code", "orphan-holder"}, {"severity", "warning"}}),
      1);
  EXPECT_EQ(
      value_of(merged, "gpureap_findings", {{"code", "inherited-holder"}, {"severity", "warning"}}),
      1);
}

TEST(ExportMetrics, KernelErrorsCountedPerGpuKindAndCodeOnlyWhenTheLogIsFollowed) {
  auto s = fleet();
  std::vector<doctor::Finding> none;
  EXPECT_EQ(family(build_metrics({s, none, {}, false}), "gpureap_gpu_kernel_events_total"),
            nullptr);
  const auto at = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'100));
  std::vector<core::KernelEventCount> counts = {
      {"0000:10:00", 0u, "xid", 31, 3, at, "nvidia", "xid"},
      // A GPU no backend reports any more (off the bus): named by its PCI address alone.
      {"0000:99:00", std::nullopt, "xid", 79, 1, std::nullopt, "nvidia", "xid"},
      // Another vendor's kind, with no earlier name: in the generic metric alone.
      {"0000:20:00", 1u, "fault", 23, 2, at, "acme", ""}};
  auto m = build_metrics({s, none, {}, false, &counts, true});
  auto labels = [](std::string gpu, std::string uuid, std::string pci, std::string vendor,
                   std::string kind, std::string code) {
    return std::vector<Label>{{"gpu", gpu},       {"uuid", uuid}, {"pci_bus_id", pci},
                              {"vendor", vendor}, {"kind", kind}, {"code", code}};
  };
  EXPECT_EQ(family(m, "gpureap_gpu_kernel_events_total")->type, MetricType::Counter);
  EXPECT_EQ(value_of(m, "gpureap_gpu_kernel_events_total",
                     labels("0", "GPU-0", "0000:10:00", "nvidia", "xid", "31")),
            3);
  EXPECT_EQ(value_of(m, "gpureap_gpu_kernel_events_total",
                     labels("", "", "0000:99:00", "nvidia", "xid", "79")),
            1);
  EXPECT_EQ(value_of(m, "gpureap_gpu_kernel_events_total",
                     labels("1", "GPU-1", "0000:20:00", "acme", "fault", "23")),
            2);
  EXPECT_EQ(family(m, "gpureap_gpu_kernel_events_total")->samples.size(), 3u);
  EXPECT_EQ(value_of(m, "gpureap_gpu_kernel_last_event_timestamp_seconds", {{"code", "31"}}),
            1'700'000'100);
  EXPECT_EQ(value_of(m, "gpureap_gpu_kernel_last_event_timestamp_seconds", {{"code", "79"}}),
            std::nullopt);  // no boot time: no wall time, never a made-up one

  // The earlier release's names stay, for the kind whose parser kept them, with its labels.
  EXPECT_EQ(family(m, "gpureap_xid_events_total")->type, MetricType::Counter);
  EXPECT_EQ(
      value_of(m, "gpureap_xid_events_total",
               {{"gpu", "0"}, {"uuid", "GPU-0"}, {"pci_bus_id", "0000:10:00"}, {"xid", "31"}}),
      3);
  EXPECT_EQ(value_of(m, "gpureap_xid_events_total",
                     {{"gpu", ""}, {"uuid", ""}, {"pci_bus_id", "0000:99:00"}, {"xid", "79"}}),
            1);
  EXPECT_EQ(family(m, "gpureap_xid_events_total")->samples.size(), 2u);
  EXPECT_EQ(value_of(m, "gpureap_xid_last_event_timestamp_seconds", {{"xid", "31"}}),
            1'700'000'100);
  EXPECT_EQ(family(m, "gpureap_fault_events_total"), nullptr);
  EXPECT_EQ(value_of(m, "gpureap_kernel_log_readable"), 1);
}

TEST(ExportMetrics, RenderedTextIsOneSeriesPerLabelSet) {
  auto s = fleet();
  std::vector<doctor::Finding> findings;
  auto text = render(build_metrics({s, findings, {}, true}));
  // Duplicate series make Prometheus drop samples: every sample line must be unique.
  std::set<std::string> seen;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    std::string series = line.substr(0, line.rfind(' '));
    EXPECT_TRUE(seen.insert(series).second) << "duplicate: " << series;
  }
  EXPECT_GT(seen.size(), 20u);
}

}  // namespace
}  // namespace gpureap::exporter
