// The metric names are an interface: the issue fixes them, and the shipped dashboard and alert
// rules use them. This keeps all three in step.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "export/metrics.h"
#include "metric_names_in.h"
#include "snapshot_builders.h"

namespace gpureap::exporter {
namespace {

using namespace gpureap::testing;

std::string deploy_file(const std::string& relative) {
  std::ifstream in(std::string(GPUREAP_FIXTURES) + "/../../deploy/" + relative);
  EXPECT_TRUE(in) << relative;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> emitted() {
  auto s =
      make_snapshot({proc(1, 0, 1), holder(200, 1, 200)}, {gpu(0, 0, GiB, {listed(200, GiB)})});
  std::vector<doctor::Finding> findings;
  std::vector<core::KernelEventCount> errors;  // the daemon follows the kernel log
  std::set<std::string> names;
  for (const auto& f : build_metrics({s, findings, {{"driver", 0.1, 0}}, true, &errors, true}))
    names.insert(f.name);
  return names;
}

TEST(ExportDeployFiles, EveryMetricTheIssueNamesIsEmitted) {
  auto names = emitted();
  for (const char* name : {"gpureap_up",
                           "gpureap_gpu_info",
                           "gpureap_gpu_memory_total_bytes",
                           "gpureap_gpu_memory_used_bytes",
                           "gpureap_gpu_memory_reserved_bytes",
                           "gpureap_gpu_memory_unattributed_bytes",
                           "gpureap_gpu_memory_ghost_bytes",
                           "gpureap_gpu_utilization_ratio",
                           "gpureap_gpu_temperature_celsius",
                           "gpureap_gpu_power_watts",
                           "gpureap_gpu_processes",
                           "gpureap_user_memory_bytes",
                           "gpureap_container_memory_bytes",
                           "gpureap_process_memory_bytes",
                           "gpureap_findings",
                           "gpureap_collect_duration_seconds",
                           "gpureap_collect_errors_total",
                           "gpureap_gpu_kernel_events_total",
                           "gpureap_gpu_kernel_last_event_timestamp_seconds",
                           "gpureap_kernel_log_readable"})
    EXPECT_TRUE(names.count(name)) << name;
}

TEST(ExportDeployFiles, DashboardQueriesOnlyMetricsGpureapEmits) {
  auto names = emitted();
  auto dashboard = nlohmann::json::parse(deploy_file("grafana/dashboard.json"));
  std::set<std::string> used;
  for (const auto& panel : dashboard["panels"])
    for (const auto& t : panel.value("targets", nlohmann::json::array()))
      for (const auto& n : gpureap_names_in(t["expr"].get<std::string>())) used.insert(n);
  for (const auto& v : dashboard["templating"]["list"])
    if (v.contains("definition"))
      for (const auto& n : gpureap_names_in(v["definition"].get<std::string>())) used.insert(n);
  EXPECT_GE(used.size(), 8u);
  for (const auto& n : used)
    EXPECT_TRUE(names.count(n)) << "the dashboard uses " << n << ", which gpureap does not emit";
}

TEST(ExportDeployFiles, AlertRulesUseOnlyMetricsGpureapEmits) {
  auto names = emitted();
  auto rules = deploy_file("prometheus/alerts.yml");
  std::set<std::string> used;
  std::istringstream in(rules);
  std::string line;
  while (std::getline(in, line))
    if (line.find("expr:") != std::string::npos)
      for (const auto& n : gpureap_names_in(line)) used.insert(n);
  EXPECT_GE(used.size(), 3u);
  for (const auto& n : used) EXPECT_TRUE(names.count(n)) << "alerts.yml uses " << n;
}

}  // namespace
}  // namespace gpureap::exporter
