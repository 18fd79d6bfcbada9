#include "report/cluster_page.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "cluster/cluster_text.h"
#include "text/byte_format.h"
#include "text/plural.h"

namespace gpureap::report {
namespace {

using Points = std::map<long long, double>;  // step number -> value

// Each instance's series, where they lie in the answer (only the drawn nodes' points are
// copied: a fleet's range answers are the report's largest data).
class ByInstance {
 public:
  ByInstance(const cluster::Answer<cluster::RangeSeries>& a, double start, double step)
      : start_(start), step_(step) {
    for (const auto& s : a.series)
      if (auto it = s.labels.find("instance"); it != s.labels.end())
        series_[it->second].push_back(&s);
  }
  // The instance's points, by step number from the start.
  Points points(const std::string& instance) const {
    Points out;
    if (auto it = series_.find(instance); it != series_.end())
      for (const auto* s : it->second)
        for (const auto& [t, v] : s->points) out[std::llround((t - start_) / step_)] = v;
    return out;
  }
  // The value at the instance's latest step, 0 when it has none.
  double last(const std::string& instance) const {
    double when = -INFINITY, value = 0;
    if (auto it = series_.find(instance); it != series_.end())
      for (const auto* s : it->second)
        for (const auto& [t, v] : s->points)
          if (t >= when) std::tie(when, value) = std::pair{t, v};
    return value;
  }

 private:
  double start_, step_;
  std::map<std::string, std::vector<const cluster::RangeSeries*>> series_;
};

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
  const ByInstance used(s.used, s.start, step), ghost(s.ghost, s.start, step),
      unattributed(s.unattributed, s.start, step), total(s.total, s.start, step);

  // The nodes to draw: those with a line, in the view's order, then the busiest others.
  std::vector<size_t> order;
  std::set<size_t> chosen;
  for (const auto& line : view.lines)
    if (chosen.insert(line.node).second) order.push_back(line.node);
  std::vector<std::pair<double, size_t>> rest;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    if (chosen.count(i)) continue;
    rest.push_back({used.last(view.nodes[i].instance), i});
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
    const Points u = used.points(node.instance), g = ghost.points(node.instance),
                 un = unattributed.points(node.instance), t = total.points(node.instance);
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
