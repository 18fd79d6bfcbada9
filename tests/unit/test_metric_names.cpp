// The metric names are one table (metric/names.h) that the exporter writes from and the cluster
// view queries by. These hold both to it: every name the cluster view asks Prometheus for is
// one the exporter writes, every family the exporter writes is in the table, and the labels the
// cluster view reads are on the exporter's samples.
#include <gtest/gtest.h>

#include <set>

#include "cluster/cluster_view.h"
#include "cluster/split_jobs.h"
#include "daemon/holder_tracking.h"
#include "export/metrics.h"
#include "metric/names.h"
#include "metric_names_in.h"
#include "snapshot_builders.h"

namespace gpureap::metric {
namespace {

using namespace gpureap::testing;
using exporter::MetricFamily;

// GPU 0: alice's job and a gone trainer (300) kept by its worker 301; GPU 1: bob's stopped
// job; one GPU error logged on GPU 0.
std::vector<MetricFamily> exported() {
  auto alice = holder(200, 1, 200);
  alice.details->user = "alice";
  auto worker = holder(301, 1, 300);
  worker.details->user = "alice";
  auto bob = holder(400, 1, 400, 1, 'T');
  bob.details->user = "bob";
  static const auto s =
      make_snapshot({proc(1, 0, 1), alice, worker, bob},
                    {gpu(0, 0, 29 * GiB, {listed(200, 20 * GiB), listed(300, 8 * GiB)}),
                     gpu(1, 1, 4 * GiB, {listed(400, 4 * GiB)})});
  static const std::vector<doctor::Finding> findings;
  static const std::vector<core::KernelEventCount> errors = {
      {"0000:01:00.0", 0u, "gpu_error", 79, 2, s.timestamp, "acme", ""}};
  return exporter::build_metrics({s, findings, {{"driver", 0.1, 0}}, true, &errors, true});
}

std::set<std::string> exported_names() {
  std::set<std::string> names;
  for (const auto& f : exported()) names.insert(f.name);
  return names;
}

TEST(MetricNames, EveryNameTheClusterViewQueriesIsOneTheExporterWrites) {
  std::vector<std::string> queries = {
      cluster::targets_query("gpu"),
      cluster::problems_query("gpu"),
      cluster::unattributed_query("gpu", {}),
      cluster::missing_query("gpu"),
      cluster::gpu_memory_query("gpu", {"node-1:9842"}),
      cluster::split_ranks_query("gpu"),
      cluster::split_memory_query("gpu"),
  };
  for (auto& q : cluster::totals_queries("gpu", {0, 1})) queries.push_back(q);
  const auto written = exported_names();
  std::set<std::string> asked;
  for (const auto& q : queries)
    for (const auto& name : gpureap_names_in(q)) asked.insert(name);
  // The view asks for the GPUs' memory, the problems, the sample times, the jobs' ranks.
  EXPECT_GE(asked.size(), 9u);
  for (const auto& name : asked) EXPECT_TRUE(written.count(name)) << name << " is not exported";
}

TEST(MetricNames, EveryFamilyTheExporterWritesIsInTheTable) {
  const std::set<std::string_view> table(std::begin(kAll), std::end(kAll));
  EXPECT_EQ(table.size(), std::size(kAll)) << "a name is in the table twice";
  for (auto name : kAll) EXPECT_TRUE(exporter::valid_metric_name(name)) << name;
  for (const auto& name : exported_names())
    EXPECT_TRUE(table.count(name)) << name << " is written but not in metric/names.h";
  // The daemon's own families: how it tracks holders (without the kernel's events here).
  std::vector<MetricFamily> tracking;
  daemon::TrackingMetrics(nullptr).add_metrics(tracking);
  ASSERT_FALSE(tracking.empty());
  for (const auto& f : tracking)
    EXPECT_TRUE(table.count(f.name)) << f.name << " is written but not in metric/names.h";
}

TEST(MetricNames, TheLabelsTheClusterViewReadsAreOnTheExportersSamples) {
  auto labels_of = [](const std::vector<MetricFamily>& families, const char* name) {
    std::set<std::string> out;
    for (const auto& f : families)
      if (f.name == name)
        for (const auto& s : f.samples)
          for (const auto& l : s.labels) out.insert(l.name);
    return out;
  };
  const auto families = exported();
  const std::pair<const char*, std::vector<const char*>> read[] = {
      {kProblemProcessMemory,
       {label::kGpu, label::kPid, label::kProblem, label::kKeepers, label::kComm, label::kUser,
        label::kPodNamespace, label::kPodName}},
      {kGpuKernelLastEvent, {label::kGpu, label::kKind, label::kCode, label::kPciBusId}},
      {kGpuMemoryUsed, {label::kGpu}},
      {kGpuMemoryUnattributed, {label::kGpu}},
  };
  for (const auto& [metric, wanted] : read) {
    auto has = labels_of(families, metric);
    ASSERT_FALSE(has.empty()) << metric << " has no samples";
    for (const char* l : wanted) EXPECT_TRUE(has.count(l)) << metric << " has no label " << l;
  }
}

}  // namespace
}  // namespace gpureap::metric
