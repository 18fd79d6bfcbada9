#include "report/cluster_page.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "cluster/cluster_text.h"
#include "text/byte_format.h"
#include "text/plural.h"

namespace gpureap::report {
namespace {

using Points = std::map<long long, double>;  // step number -> value

// The answer's points (a sum: one series; more are added up), by step number from the start.
Points points_of(const cluster::Answer<cluster::RangeSeries>& a, double start, double step) {
  Points out;
  for (const auto& s : a.series)
    for (const auto& [t, v] : s.points)
      if (std::isfinite(v)) out[std::llround((t - start) / step)] += v;
  return out;
}

uint64_t clamp_bytes(double v) {
  if (!(v > 0)) return 0;
  return v > 1e18 ? uint64_t{1'000'000'000'000'000'000ull} : static_cast<uint64_t>(std::llround(v));
}

TimePoint page_time(double seconds) {
  return TimePoint(
      std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(seconds)));
}

// A node with something to say: its lines (a node-wide state, or its GPUs), in the view's order.
struct ProblemNode {
  size_t node = 0;
  uint64_t at_stake = 0;
  std::vector<const cluster::Line*> lines;
};

// Worst first: the most memory at stake; then the view's order (its lines are ranked, and the
// nodes that say nothing, down or missing, come after those with known memory).
std::vector<ProblemNode> problem_nodes(const cluster::ClusterView& view) {
  std::vector<ProblemNode> out;
  std::map<size_t, size_t> at;
  for (const auto& line : view.lines) {
    auto [it, added] = at.emplace(line.node, out.size());
    if (added) out.push_back({line.node, 0, {}});
    auto& n = out[it->second];
    n.at_stake += line.at_stake.value_or(0);
    n.lines.push_back(&line);
  }
  std::stable_sort(out.begin(), out.end(), [](const ProblemNode& a, const ProblemNode& b) {
    return a.at_stake > b.at_stake;
  });
  return out;
}

std::vector<std::string> table_row_problems(const cluster::ClusterView& view,
                                            const ProblemNode& n) {
  std::vector<std::string> out;
  for (const auto* line : n.lines)
    out.push_back((line->gpu ? "GPU " + std::to_string(*line->gpu) + ": " : "") +
                  cluster::describe(view, *line));
  return out;
}

std::vector<std::string> table_row_commands(const ProblemNode& n) {
  std::vector<std::string> out;
  for (const auto* line : n.lines) {
    auto command = cluster::command_text(*line);
    out.push_back(command.empty() ? "(" + line->command_note + ")" : command);
  }
  return out;
}

LeadTable problem_table(const cluster::ClusterView& view, size_t max_nodes) {
  LeadTable t;
  t.title = "Nodes with problems, worst first";
  t.headers = {"node", "at stake", "problems", "run on the node"};
  const auto nodes = problem_nodes(view);
  for (size_t i = 0; i < nodes.size() && i < max_nodes; ++i) {
    const auto& n = nodes[i];
    t.rows.push_back({{view.nodes[n.node].label},
                      {n.at_stake ? text::human_bytes(n.at_stake) : "-"},
                      table_row_problems(view, n),
                      table_row_commands(n)});
  }
  if (nodes.empty()) t.note = "No node has a problem now.";
  if (nodes.size() > max_nodes)
    t.note = text::plural(nodes.size() - max_nodes, "more node") +
             " with problems, each with less at stake: `gpureap cluster` lists every one.";
  return t;
}

GpuChart fleet_chart(const PageSeries& s) {
  const double step = s.step > 0 ? s.step : 60;
  const Points ghost = points_of(s.ghost, s.start, step),
               unattributed = points_of(s.unattributed, s.start, step);
  GpuChart chart;
  chart.title = "Ghost and unattributed memory, the whole fleet";
  chart.gap = std::chrono::milliseconds(static_cast<long long>(step * 2500));
  chart.scale_to_data = true;
  chart.draw_when_idle = true;
  Band ghost_band{BandKind::Ghost, "ghost", "ghost", {}};
  Band unattributed_band{BandKind::Unattributed, "unattributed", "unattributed", {}};
  std::map<long long, bool> steps;
  for (const auto* p : {&ghost, &unattributed})
    for (const auto& [k, v] : *p) steps[k] = true;
  for (const auto& step_value : steps) {
    // A plain variable: clang before 16 lets no lambda capture a structured binding.
    const long long k = step_value.first;
    chart.times.push_back(page_time(s.start + static_cast<double>(k) * step));
    auto value = [&](const Points& p) {
      auto it = p.find(k);
      return it == p.end() ? uint64_t{0} : clamp_bytes(it->second);
    };
    ghost_band.bytes.push_back(value(ghost));
    unattributed_band.bytes.push_back(value(unattributed));
  }
  chart.bands = {std::move(ghost_band), std::move(unattributed_band)};
  return chart;
}

}  // namespace

std::string fleet_sum_query(const std::string& metric, const std::string& job) {
  return "sum(" + metric + "{job=" + cluster::promql_string(job) + "})";
}

Page build_cluster_page(const cluster::ClusterView& view, const PageSeries& s,
                        const std::string& prometheus, size_t max_nodes) {
  Page page;
  page.title = "gpureap cluster";
  page.subtitle = text::plural(view.nodes.size(), "node") + ", from " + prometheus + ", " +
                  utc_time(page_time(s.start)) + " to " + utc_time(page_time(s.end)) + " UTC";
  page.from = page_time(s.start);
  page.to = page_time(s.end);
  page.generated = page_time(view.time);
  page.has_ghost_table = false;
  const auto& h = view.healthy;
  page.notes.push_back(text::plural(h.nodes, "node") + " healthy now" +
                       (h.nodes ? ": " + text::plural(h.gpus, "GPU") + ", " +
                                      text::human_bytes(h.used) + " of " +
                                      text::human_bytes(h.total) + " used."
                                : "."));
  page.lead = problem_table(view, max_nodes);
  for (const auto& job : view.split_jobs) {
    std::string commands;
    for (const auto& held : job.held_on) {
      const auto words = cluster::command_text(held.command);
      commands += (commands.empty() ? "" : "; ") +
                  (words.empty() ? view.nodes[held.node].label + ": " + held.command_note : words);
    }
    page.notes.push_back("A job split across nodes (its run id is its user's label): " +
                         cluster::describe_split_job(view, job) + ". Run: " + commands + ".");
  }
  page.gpus.push_back(fleet_chart(s));
  if (page.gpus.back().times.empty())
    page.notes.push_back("Prometheus holds no ghost or unattributed memory figures in the window.");
  return page;
}

}  // namespace gpureap::report
