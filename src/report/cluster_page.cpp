#include "report/cluster_page.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "cluster/cluster_text.h"
#include "text/byte_format.h"
#include "text/plural.h"

namespace gpureap::report {
namespace {

using Points = std::map<long long, double>;  // step number -> value

// Each instance's points, by step number from the start.
std::map<std::string, Points> by_instance(const cluster::Answer<cluster::RangeSeries>& a,
                                          double start, double step) {
  std::map<std::string, Points> out;
  for (const auto& s : a.series) {
    auto it = s.labels.find("instance");
    if (it == s.labels.end()) continue;
    auto& points = out[it->second];
    for (const auto& [t, v] : s.points) points[std::llround((t - start) / step)] = v;
  }
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

}  // namespace

std::string node_sum_query(const std::string& metric, const std::string& job) {
  return "sum by (instance) (" + metric + "{job=" + cluster::promql_string(job) + "})";
}

Page build_cluster_page(const cluster::ClusterView& view, const PageSeries& s,
                        const std::string& prometheus, size_t max_nodes) {
  Page page;
  page.title = "gpureap cluster";
  page.subtitle = std::to_string(view.nodes.size()) + " nodes, from " + prometheus + ", " +
                  utc_time(page_time(s.start)) + " to " + utc_time(page_time(s.end)) + " UTC";
  page.from = page_time(s.start);
  page.to = page_time(s.end);
  page.generated = page_time(view.time);
  page.has_ghost_table = false;

  for (const auto& line : view.lines) {
    const auto& node = view.nodes[line.node];
    auto command = cluster::command_text(line);
    page.notes.push_back(node.name + (line.gpu ? ", GPU " + std::to_string(*line.gpu) : "") + ": " +
                         cluster::describe(view, line) +
                         (command.empty() ? "" : ". Run: " + command));
  }
  const auto& h = view.healthy;
  if (h.nodes)
    page.notes.push_back(
        text::plural(h.nodes, "node") + " healthy now: " + text::plural(h.gpus, "GPU") + ", " +
        text::human_bytes(h.used) + " of " + text::human_bytes(h.total) + " used.");

  const double step = s.step > 0 ? s.step : 60;
  auto used = by_instance(s.used, s.start, step);
  auto ghost = by_instance(s.ghost, s.start, step);
  auto unattributed = by_instance(s.unattributed, s.start, step);
  auto total = by_instance(s.total, s.start, step);

  // The nodes to draw: those with a line, in the view's order, then the busiest others.
  std::vector<size_t> order;
  std::set<size_t> chosen;
  for (const auto& line : view.lines)
    if (chosen.insert(line.node).second) order.push_back(line.node);
  std::vector<std::pair<double, size_t>> rest;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    if (chosen.count(i)) continue;
    const auto& p = used[view.nodes[i].instance];
    rest.push_back({p.empty() ? 0 : p.rbegin()->second, i});
  }
  std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (const auto& r : rest) order.push_back(r.second);
  if (order.size() > max_nodes) {
    page.notes.push_back(text::plural(order.size() - max_nodes, "more node") +
                         " not drawn (the least used, all healthy); `gpureap cluster` lists "
                         "every node with something to say.");
    order.resize(max_nodes);
  }

  unsigned chart_index = 0;
  for (size_t i : order) {
    const auto& node = view.nodes[i];
    GpuChart chart;
    chart.gpu = chart_index++;
    chart.title = node.name == node.instance ? node.name : node.name + " (" + node.instance + ")";
    chart.gap = std::chrono::milliseconds(static_cast<long long>(step * 2500));
    const auto& u = used[node.instance];
    const auto& g = ghost[node.instance];
    const auto& un = unattributed[node.instance];
    const auto& t = total[node.instance];
    if (!t.empty()) chart.total_bytes = clamp_bytes(t.rbegin()->second);
    Band in_use{BandKind::Other, "in-use", "in use by listed processes", {}};
    Band ghost_band{BandKind::Ghost, "ghost", "ghost", {}};
    Band unattributed_band{BandKind::Unattributed, "unattributed", "unattributed", {}};
    for (const auto& [step_no, v] : u) {
      const long long k = step_no;
      chart.times.push_back(page_time(s.start + static_cast<double>(k) * step));
      auto find = [&](const Points& p) {
        auto it = p.find(k);
        return it == p.end() ? uint64_t{0} : clamp_bytes(it->second);
      };
      const uint64_t all = clamp_bytes(v), gb = find(g), ub = find(un);
      ghost_band.bytes.push_back(std::min(gb, all));
      unattributed_band.bytes.push_back(std::min(ub, all - std::min(gb, all)));
      in_use.bytes.push_back(all - ghost_band.bytes.back() - unattributed_band.bytes.back());
    }
    chart.bands = {std::move(in_use), std::move(ghost_band), std::move(unattributed_band)};
    if (chart.times.empty())
      page.notes.push_back(node.name + ": no memory figures in the window (" +
                           (node.up && *node.up == 0 ? "its daemon is down" : "none scraped") +
                           ").");
    page.gpus.push_back(std::move(chart));
  }
  return page;
}

}  // namespace gpureap::report
