// gpureap_problem_process_memory_bytes and gpureap_sample_timestamp_seconds: what the cluster
// view needs from each node's metrics to name PIDs and the command that frees them.
#include <gtest/gtest.h>

#include "export/metrics.h"
#include "export/problem_metrics.h"
#include "snapshot_builders.h"

namespace gpureap::exporter {
namespace {

using namespace gpureap::testing;

const MetricFamily* problem_family(const std::vector<MetricFamily>& families,
                                   const std::string& name) {
  for (const auto& f : families)
    if (f.name == name) return &f;
  return nullptr;
}

std::string label_of(const Sample& s, const std::string& name) {
  for (const auto& l : s.labels)
    if (l.name == name) return l.value;
  return "(none)";
}

// GPU 0: alice's healthy job in a pod, a gone trainer (300, 8 GiB) kept by its worker 301;
// GPU 1: bob's stopped job (400, 4 GiB).
core::Snapshot problem_fleet() {
  auto alice = holder(200, 1, 200);
  alice.details->user = "alice";
  auto worker = holder(301, 1, 300);
  worker.details->user = "alice";
  worker.details->container =
      core::ContainerInfo{"kubernetes", "c0ffee", "pod-1", "train", "bert-0", "research"};
  worker.details->container->verified = true;
  auto bob = holder(400, 1, 400, 1, 'T');
  bob.details->user = "bob";
  return make_snapshot({proc(1, 0, 1), alice, worker, bob},
                       {gpu(0, 0, 29 * GiB, {listed(200, 20 * GiB), listed(300, 8 * GiB)}),
                        gpu(1, 1, 4 * GiB, {listed(400, 4 * GiB)})});
}

TEST(ExportProblemMetrics, GhostsWithKeepersAndStoppedHoldersOnePerPidAndGpu) {
  auto s = problem_fleet();
  std::vector<doctor::Finding> findings;
  auto m = build_metrics({s, findings, {}, false});
  const auto* f = problem_family(m, "gpureap_problem_process_memory_bytes");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->samples.size(), 2u);
  const auto& ghost = f->samples[0];
  EXPECT_EQ(label_of(ghost, "gpu"), "0");
  EXPECT_EQ(label_of(ghost, "pid"), "300");
  EXPECT_EQ(label_of(ghost, "problem"), "ghost");
  EXPECT_EQ(label_of(ghost, "keepers"), "301");
  // A gone PID is charged to its keeper's user and pod.
  EXPECT_EQ(label_of(ghost, "user"), "alice");
  EXPECT_EQ(label_of(ghost, "pod_namespace"), "research");
  EXPECT_EQ(label_of(ghost, "pod_name"), "bert-0");
  EXPECT_EQ(ghost.value, 8.0 * GiB);
  const auto& stopped = f->samples[1];
  EXPECT_EQ(label_of(stopped, "gpu"), "1");
  EXPECT_EQ(label_of(stopped, "pid"), "400");
  EXPECT_EQ(label_of(stopped, "problem"), "stopped");
  EXPECT_EQ(label_of(stopped, "keepers"), "");
  EXPECT_EQ(label_of(stopped, "user"), "bob");
  EXPECT_EQ(stopped.value, 4.0 * GiB);
}

TEST(ExportProblemMetrics, AHealthyNodeHasNoProblemSeriesButItsSampleTime) {
  auto s =
      make_snapshot({proc(1, 0, 1), holder(200, 1, 200)}, {gpu(0, 0, GiB, {listed(200, GiB)})});
  s.timestamp = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  std::vector<doctor::Finding> findings;
  auto m = build_metrics({s, findings, {}, false});
  ASSERT_NE(problem_family(m, "gpureap_problem_process_memory_bytes"), nullptr);
  EXPECT_TRUE(problem_family(m, "gpureap_problem_process_memory_bytes")->samples.empty());
  const auto* t = problem_family(m, "gpureap_sample_timestamp_seconds");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->samples.size(), 1u);
  EXPECT_EQ(t->samples[0].value, 1'700'000'000.0);
}

TEST(ExportProblemMetrics, ManyKeepersAreCutToAShortLabel) {
  std::vector<core::HostProcess> ps{proc(1, 0, 1)};
  for (pid_t p = 501; p <= 540; ++p) ps.push_back(holder(p, 1, 500));
  auto s = make_snapshot(ps, {gpu(0, 0, 8 * GiB, {listed(500, 8 * GiB)})});
  std::vector<doctor::Finding> findings;
  auto m = build_metrics({s, findings, {}, false});
  const auto* f = problem_family(m, "gpureap_problem_process_memory_bytes");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->samples.size(), 1u);
  EXPECT_EQ(label_of(f->samples[0], "keepers"),
            "501,502,503,504,505,506,507,508,509,510,511,512,513,514,515,516,+24");
}

}  // namespace
}  // namespace gpureap::exporter
