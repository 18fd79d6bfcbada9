#include "cluster/split_jobs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "metric/names.h"

namespace gpureap::cluster {
namespace split {

// Neither joins two jobs: "" (a launcher without the label) and torchrun's default.
bool joinable_run_id(const std::string& run_id) {
  return !run_id.empty() && run_id != "none";
}

std::string label_of(const Labels& l, const char* name) {
  auto it = l.find(name);
  return it == l.end() ? std::string() : it->second;
}

// A count or a byte figure Prometheus summed: whole, not negative, not absurd.
std::optional<uint64_t> whole(double v) {
  if (!(v >= 0) || v > 1e18) return std::nullopt;
  return static_cast<uint64_t>(std::llround(v));
}

// The jobs with gone ranks somewhere, by run id and user (the right side of each query's `and`).
std::string with_gone_ranks(const std::string& job) {
  return "(sum by (run_id, user) (" + std::string(metric::kJobRanks) +
         "{job=" + promql_string(job) + ",state=\"gone\",run_id!~\"|none\"}) > 0)";
}

struct PerNode {
  uint64_t live = 0, gone = 0, bytes = 0;
};

}  // namespace split

std::string split_ranks_query(const std::string& job) {
  return "sum by (instance, run_id, user, state) (" + std::string(metric::kJobRanks) +
         "{job=" + promql_string(job) + ",run_id!~\"|none\"}) and on (run_id, user) " +
         split::with_gone_ranks(job);
}

std::string split_memory_query(const std::string& job) {
  return "sum by (instance, run_id, user) (" + std::string(metric::kJobMemory) +
         "{job=" + promql_string(job) + ",run_id!~\"|none\"}) and on (run_id, user) " +
         split::with_gone_ranks(job);
}

void add_split_jobs(ClusterView& view, const Answer<Sample>& ranks, const Answer<Sample>& memory,
                    const ViewSettings& settings, const Filters& filters) {
  std::map<std::string, size_t> node_of;
  for (size_t i = 0; i < view.nodes.size(); ++i) node_of[view.nodes[i].instance] = i;
  // run id, user → node → figures
  std::map<std::pair<std::string, std::string>, std::map<size_t, split::PerNode>> jobs;
  auto figures = [&](const Sample& s) -> split::PerNode* {
    const auto run_id = split::label_of(s.labels, metric::label::kRunId);
    auto node = node_of.find(split::label_of(s.labels, "instance"));
    if (!split::joinable_run_id(run_id) || node == node_of.end()) return nullptr;
    return &jobs[{run_id, split::label_of(s.labels, metric::label::kUser)}][node->second];
  };
  for (const auto& s : ranks.series) {
    const auto state = split::label_of(s.labels, metric::label::kState);
    auto* f = figures(s);
    auto n = split::whole(s.value);
    if (!f || !n || (state != "live" && state != "gone")) {
      ++view.skipped_series;
      continue;
    }
    (state == "live" ? f->live : f->gone) += *n;
  }
  for (const auto& s : memory.series) {
    auto* f = figures(s);
    auto n = split::whole(s.value);
    if (!f || !n) {
      ++view.skipped_series;
      continue;
    }
    f->bytes += *n;
  }
  for (const auto* a : {&ranks, &memory}) {
    view.skipped_series += a->skipped;
    for (const auto& w : a->warnings) view.warnings.push_back(w);
  }
  if (!filters.pods.empty()) return;

  for (const auto& [key, nodes] : jobs) {
    SplitJob job{key.first, key.second, {}, {}, 0};
    bool named = filters.nodes.empty();
    for (const auto& [i, f] : nodes) {
      const auto& node = view.nodes[i];
      named = named || std::any_of(filters.nodes.begin(), filters.nodes.end(), [&](const auto& w) {
                return w == node.name || w == node.instance;
              });
      if (f.gone > 0) {
        job.gone_on.push_back({i, f.gone});
      } else if (f.live > 0 && f.bytes > 0) {
        // Doctor, never a kill: the join rests on a label the user sets, and only the node
        // sees whether these ranks are the job's (its process tree, its launcher).
        SplitJob::HeldOn held{i, f.live, f.bytes, {}, {}};
        held.command =
            command_on_node(node, settings.via, {"gpureap", "doctor"}, held.command_note);
        job.held_bytes += f.bytes;
        job.held_on.push_back(std::move(held));
      }
    }
    if (!named || job.gone_on.empty() || job.held_on.empty()) continue;
    // The view's nodes are by name, and so are these (by index); the most memory first.
    std::stable_sort(job.held_on.begin(), job.held_on.end(),
                     [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    view.split_jobs.push_back(std::move(job));
  }
  std::stable_sort(
      view.split_jobs.begin(), view.split_jobs.end(),
      [](const SplitJob& a, const SplitJob& b) { return a.held_bytes > b.held_bytes; });
}

}  // namespace gpureap::cluster
