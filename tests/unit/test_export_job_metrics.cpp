// gpureap_job_ranks, gpureap_job_memory_bytes and gpureap_stalled_job_memory_bytes: each
// distributed job's ranks on the node, live and gone, the memory its live ranks hold, and the
// memory a stalled job's live ranks hold, at doctor's severity.
#include <gtest/gtest.h>

#include "doctor/diagnose.h"
#include "export/job_metrics.h"
#include "export/metrics.h"
#include "snapshot_builders.h"

namespace gpureap::exporter {
namespace {

using namespace gpureap::testing;

core::HostProcess labelled_rank(pid_t pid, pid_t launcher, unsigned n, unsigned minor, uid_t uid,
                                const std::string& user, const std::string& run_id) {
  auto p = owned(holder(pid, launcher, launcher, minor), uid, user);
  core::RankLabels l;
  l.local_rank = n;
  l.local_world_size = 4;
  l.run_id = run_id;
  p.details->rank_labels = l;
  return p;
}

std::map<std::string, std::string> job_labels_of(const Sample& s) {
  std::map<std::string, std::string> out;
  for (const auto& l : s.labels) out[l.name] = l.value;
  return out;
}

const MetricFamily* job_family(const std::vector<MetricFamily>& fs, const std::string& name) {
  for (const auto& f : fs)
    if (f.name == name) return &f;
  return nullptr;
}

TEST(ExportJobMetrics, EveryJobsRanksAndOneSeriesPerStalledJob) {
  // alice's job lost rank 3 (a zombie her launcher has not reaped, which the daemon watched
  // end); bob's job is whole.
  std::vector<core::HostProcess> ps{proc(1, 0, 1), owned(proc(500, 1, 500), 1000, "alice"),
                                    owned(proc(504, 500, 500, 'Z'), 1000, "alice"),
                                    owned(proc(700, 1, 700), 1001, "bob")};
  for (unsigned n = 0; n < 3; ++n)
    ps.push_back(labelled_rank(501 + n, 500, n, n, 1000, "alice", "exp-\"7\""));
  for (unsigned n = 0; n < 4; ++n)
    ps.push_back(labelled_rank(701 + n, 700, n, 3, 1001, "bob", "none"));
  SnapshotOptions o;  // the daemon watched rank 3 (504) end
  o.rank_exits = {{500, 1500, 504, 1504, 3u, 1600, 9}};
  auto s = make_snapshot(
      ps,
      {gpu(0, 0, 32 * GiB, {listed(501, 32 * GiB)}), gpu(1, 1, 32 * GiB, {listed(502, 32 * GiB)}),
       gpu(2, 2, 32 * GiB, {listed(503, 32 * GiB)}), gpu(3, 3, 8 * GiB, {listed(701, 8 * GiB)})},
      o);
  const auto findings = doctor::diagnose({s, s, {}, std::nullopt, {}});
  const auto m = build_metrics({s, findings, {}, false});

  const auto* ranks = job_family(m, "gpureap_job_ranks");
  ASSERT_NE(ranks, nullptr);
  std::vector<std::pair<std::map<std::string, std::string>, double>> got;
  for (const auto& x : ranks->samples) got.emplace_back(job_labels_of(x), x.value);
  using L = std::map<std::string, std::string>;
  const L alice{
      {"launcher_pid", "500"}, {"user", "alice"}, {"kind", "p500"}, {"run_id", "exp-\"7\""}};
  const L bob{{"launcher_pid", "700"}, {"user", "bob"}, {"kind", "p700"}, {"run_id", "none"}};
  auto with = [](L l, const std::string& k, const std::string& v) {
    l[k] = v;
    return l;
  };
  EXPECT_EQ(got, (std::vector<std::pair<L, double>>{{with(alice, "state", "live"), 3},
                                                    {with(alice, "state", "gone"), 1},
                                                    {with(bob, "state", "live"), 4},
                                                    {with(bob, "state", "gone"), 0}}));

  // Every job's live ranks' memory, a whole job's too: the cluster view finds the nodes where a
  // job lives on after its ranks on another node are gone.
  const auto* memory = job_family(m, "gpureap_job_memory_bytes");
  ASSERT_NE(memory, nullptr);
  std::vector<std::pair<L, double>> held;
  for (const auto& x : memory->samples) held.emplace_back(job_labels_of(x), x.value);
  EXPECT_EQ(held, (std::vector<std::pair<L, double>>{{alice, 96.0 * GiB}, {bob, 8.0 * GiB}}));

  const auto* stalled = job_family(m, "gpureap_stalled_job_memory_bytes");
  ASSERT_NE(stalled, nullptr);
  ASSERT_EQ(stalled->samples.size(), 1u);  // bob's whole job has none
  EXPECT_EQ(job_labels_of(stalled->samples[0]), with(alice, "severity", "warning"));
  EXPECT_EQ(stalled->samples[0].value, 96.0 * GiB);
  // The run id is its user's text: escaped in the exposition.
  EXPECT_NE(render(m).find("run_id=\"exp-\\\"7\\\"\""), std::string::npos);
}

TEST(ExportJobMetrics, ANodeWithoutJobsHasTheFamiliesButNoSeries) {
  auto s = make_snapshot({proc(1, 0, 1), holder(200, 1, 200)},
                         {gpu(0, 0, 8 * GiB, {listed(200, 8 * GiB)})});
  const auto m = build_metrics({s, {}, {}, false});
  ASSERT_NE(job_family(m, "gpureap_job_ranks"), nullptr);
  EXPECT_TRUE(job_family(m, "gpureap_job_ranks")->samples.empty());
  ASSERT_NE(job_family(m, "gpureap_job_memory_bytes"), nullptr);
  EXPECT_TRUE(job_family(m, "gpureap_job_memory_bytes")->samples.empty());
  ASSERT_NE(job_family(m, "gpureap_stalled_job_memory_bytes"), nullptr);
  EXPECT_TRUE(job_family(m, "gpureap_stalled_job_memory_bytes")->samples.empty());
}

}  // namespace
}  // namespace gpureap::exporter
