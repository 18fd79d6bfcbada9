// Jobs split across nodes: the daemons' job series joined on the launcher's run id and user,
// the nodes that hold the memory each with doctor's command, and the joins the view refuses (an
// empty run id, torchrun's default "none", the same run id under another user).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cluster/cluster_text.h"
#include "cluster/cluster_view.h"
#include "cluster/split_jobs.h"
#include "report/cluster_page.h"

namespace gpureap::cluster {
namespace {

constexpr double kSplitNow = 1'800'000'000;
constexpr double kSplitGiB = 1073741824.0;

Labels job_at(const std::string& instance, const std::string& run_id, const std::string& user,
              const std::string& state = "") {
  Labels l{{"instance", instance}, {"run_id", run_id}, {"user", user}};
  if (!state.empty()) l["state"] = state;
  return l;
}

Sample valued(Labels labels, double value) {
  Sample s;
  s.labels = std::move(labels);
  s.time = kSplitNow;
  s.value = value;
  return s;
}

// A node's ranks of one job, as split_ranks_query's answer sums them.
void ranks_on(Answer<Sample>& a, const std::string& instance, const std::string& run_id,
              const std::string& user, double live, double gone) {
  a.series.push_back(valued(job_at(instance, run_id, user, "live"), live));
  a.series.push_back(valued(job_at(instance, run_id, user, "gone"), gone));
}

// The nodes, as `up` names them: healthy daemons with no GPU series.
ClusterView nodes_view(const std::vector<std::string>& instances) {
  Answer<Sample> facts;
  for (const auto& i : instances) {
    facts.series.push_back(valued({{"__name__", "up"}, {"instance", i}, {"job", "gpureap"}}, 1));
    facts.series.push_back(
        valued({{"__name__", "gpureap_up"}, {"instance", i}, {"job", "gpureap"}}, 1));
  }
  return build_view(facts, Answer<Sample>{}, kSplitNow, ViewSettings{}, Filters{});
}

ClusterView split_view(const Answer<Sample>& ranks, const Answer<Sample>& memory,
                       const Filters& filters = {}, const ViewSettings& settings = {}) {
  auto v = nodes_view({"node-a:9842", "node-b:9842", "node-c:9842", "node-d:9842"});
  add_split_jobs(v, ranks, memory, settings, filters);
  return v;
}

std::string split_text(const ClusterView& v) {
  return render_text(v, output::Style(false), std::nullopt);
}

// alice's exp-7 lost a rank on node-a; its 4 ranks on node-b and 2 on node-c hold memory.
void alice_split(Answer<Sample>& ranks, Answer<Sample>& memory) {
  ranks_on(ranks, "node-a:9842", "exp-7", "alice", 3, 1);
  ranks_on(ranks, "node-b:9842", "exp-7", "alice", 4, 0);
  ranks_on(ranks, "node-c:9842", "exp-7", "alice", 2, 0);
  memory.series.push_back(valued(job_at("node-a:9842", "exp-7", "alice"), 72 * kSplitGiB));
  memory.series.push_back(valued(job_at("node-b:9842", "exp-7", "alice"), 96 * kSplitGiB));
  memory.series.push_back(valued(job_at("node-c:9842", "exp-7", "alice"), 48 * kSplitGiB));
}

TEST(ClusterSplitJobs, GoneRanksOnOneNodeNameTheNodesThatStillHoldMemoryWithDoctor) {
  Answer<Sample> ranks, memory;
  alice_split(ranks, memory);
  auto v = split_view(ranks, memory);
  ASSERT_EQ(v.split_jobs.size(), 1u);
  const auto& job = v.split_jobs[0];
  EXPECT_EQ(job.held_bytes, static_cast<uint64_t>(144 * kSplitGiB));
  ASSERT_EQ(job.gone_on.size(), 1u);
  EXPECT_EQ(v.nodes[job.gone_on[0].node].name, "node-a");
  EXPECT_EQ(split_text(v),
            "Jobs split across nodes (joined on the run id and user their launchers carry, a "
            "label the user sets: check it on the node before acting):\n"
            "job exp-7 (alice): 1 rank gone on node-a; node-b's 4 ranks still hold 96 GiB; "
            "node-c's 2 ranks still hold 48 GiB\n"
            "  run: ssh -t node-b sudo gpureap doctor\n"
            "  run: ssh -t node-c sudo gpureap doctor\n"
            "4 nodes healthy: 0 GPUs.\n");
  // Doctor on each node that holds memory, never a kill: the run id is the user's claim.
  for (const auto& h : job.held_on) {
    ASSERT_GE(h.command.size(), 2u);
    EXPECT_EQ(std::vector<std::string>(h.command.end() - 2, h.command.end()),
              (std::vector<std::string>{"gpureap", "doctor"}));
  }
  auto j = to_json(v, "http://prometheus:9090", ViewSettings{});
  ASSERT_EQ(j["split_jobs"].size(), 1u);
  EXPECT_EQ(j["split_jobs"][0]["held_on"][0]["command"], "ssh -t node-b sudo gpureap doctor");
  EXPECT_EQ(j["split_jobs"][0]["gone_on"][0]["ranks"], 1);
  // The cluster page says it too, with the same commands.
  const auto page =
      report::build_cluster_page(v, report::PageSeries{}, "http://prometheus:9090", 10);
  EXPECT_NE(std::find(page.notes.begin(), page.notes.end(),
                      "A job split across nodes (its run id is its user's label): job exp-7 "
                      "(alice): 1 rank gone on node-a; node-b's 4 ranks still hold 96 GiB; "
                      "node-c's 2 ranks still hold 48 GiB. Run: ssh -t node-b sudo gpureap "
                      "doctor; ssh -t node-c sudo gpureap doctor."),
            page.notes.end());
}

TEST(ClusterSplitJobs, NoJoinOnAnEmptyRunIdNoneOrAnotherUsersRunId) {
  Answer<Sample> ranks, memory;
  // torchrun's default run id and a launcher without one: every such job would join.
  for (const std::string id : {"none", ""}) {
    ranks_on(ranks, "node-a:9842", id, "alice", 1, 1);
    ranks_on(ranks, "node-b:9842", id, "alice", 4, 0);
    memory.series.push_back(valued(job_at("node-b:9842", id, "alice"), 96 * kSplitGiB));
  }
  // bob reuses carol's run id on another node: two jobs, neither split.
  ranks_on(ranks, "node-c:9842", "shared", "carol", 1, 1);
  ranks_on(ranks, "node-d:9842", "shared", "bob", 4, 0);
  memory.series.push_back(valued(job_at("node-d:9842", "shared", "bob"), 96 * kSplitGiB));
  auto v = split_view(ranks, memory);
  EXPECT_TRUE(v.split_jobs.empty());
  EXPECT_EQ(v.skipped_series,
            10u);  // "none" and "" are never joined, even if Prometheus sends them
  EXPECT_EQ(split_text(v),
            "4 nodes healthy: 0 GPUs.\n(10 series of Prometheus's answer skipped: "
            "malformed values or labels)\n");
}

TEST(ClusterSplitJobs, AWholeJobOrRanksThatHoldNothingAreNoSplitJob) {
  Answer<Sample> ranks, memory;
  // dave's job lost no rank anywhere; erin's ranks on node-b hold no memory (nothing at stake).
  ranks_on(ranks, "node-a:9842", "whole", "dave", 4, 0);
  ranks_on(ranks, "node-b:9842", "whole", "dave", 4, 0);
  memory.series.push_back(valued(job_at("node-b:9842", "whole", "dave"), 96 * kSplitGiB));
  ranks_on(ranks, "node-a:9842", "idle", "erin", 0, 2);
  ranks_on(ranks, "node-b:9842", "idle", "erin", 2, 0);
  memory.series.push_back(valued(job_at("node-b:9842", "idle", "erin"), 0));
  EXPECT_TRUE(split_view(ranks, memory).split_jobs.empty());
}

TEST(ClusterSplitJobs, FiltersOnlyNarrowAndHostileSeriesAreSkipped) {
  Answer<Sample> ranks, memory;
  alice_split(ranks, memory);
  EXPECT_EQ(split_view(ranks, memory, Filters{{"node-a"}, {}, {}}).split_jobs.size(), 1u);
  EXPECT_EQ(split_view(ranks, memory, Filters{{"node-d"}, {}, {}}).split_jobs.size(), 0u);
  EXPECT_EQ(split_view(ranks, memory, Filters{{}, {0}, {}}).split_jobs.size(), 1u);
  EXPECT_EQ(split_view(ranks, memory, Filters{{}, {}, {"trainer"}}).split_jobs.size(), 0u);

  // A node Prometheus does not list, a state no daemon writes, a negative count: skipped, and
  // a run id with terminal escapes is shown escaped.
  ranks_on(ranks, "node-z:9842", "exp-7", "alice", 8, 0);
  ranks.series.push_back(valued(job_at("node-b:9842", "exp-7", "alice", "zombie"), 3));
  ranks.series.push_back(valued(job_at("node-b:9842", "exp-7", "alice", "live"), -4));
  ranks_on(ranks, "node-d:9842", "x\x1b[2Jy", "mallory", 1, 1);
  ranks_on(ranks, "node-c:9842", "x\x1b[2Jy", "mallory", 1, 0);
  memory.series.push_back(valued(job_at("node-c:9842", "x\x1b[2Jy", "mallory"), kSplitGiB));
  auto v = split_view(ranks, memory);
  EXPECT_EQ(v.skipped_series, 4u);
  ASSERT_EQ(v.split_jobs.size(), 2u);
  EXPECT_EQ(v.split_jobs[0].held_bytes, static_cast<uint64_t>(144 * kSplitGiB));
  const auto text = split_text(v);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
}

TEST(ClusterSplitJobs, TheQueriesLetPrometheusJoinOnRunIdAndUser) {
  EXPECT_EQ(split_ranks_query("gpu\"reap"),
            "sum by (instance, run_id, user, state) (gpureap_job_ranks{job=\"gpu\\\"reap\","
            "run_id!~\"|none\"}) and on (run_id, user) (sum by (run_id, user) "
            "(gpureap_job_ranks{job=\"gpu\\\"reap\",state=\"gone\",run_id!~\"|none\"}) > 0)");
  EXPECT_EQ(split_memory_query("gpureap"),
            "sum by (instance, run_id, user) (gpureap_job_memory_bytes{job=\"gpureap\","
            "run_id!~\"|none\"}) and on (run_id, user) (sum by (run_id, user) "
            "(gpureap_job_ranks{job=\"gpureap\",state=\"gone\",run_id!~\"|none\"}) > 0)");
}

}  // namespace
}  // namespace gpureap::cluster
