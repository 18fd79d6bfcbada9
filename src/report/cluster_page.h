#pragma once
// `gpureap report --prometheus`: the cluster view (src/cluster) as one page, in the single node
// page's style (page.h, drawn by html_page.h): per node, its GPUs' memory over time from
// Prometheus range queries, split as the daemon splits it (in use by listed processes, ghost,
// unattributed), the nodes with something to say first; the view's lines, with their
// commands, under the title.
#include <cstddef>
#include <string>

#include "cluster/cluster_view.h"
#include "cluster/prom_answer.h"
#include "report/page.h"

namespace gpureap::report {

// Per instance, summed over the node's GPUs.
std::string node_sum_query(const std::string& metric, const std::string& job);

struct PageSeries {
  cluster::Answer<cluster::RangeSeries> used, ghost, unattributed, total;
  double start = 0, end = 0, step = 0;
};

// At most `max_nodes` charts: every node with a line first (in the view's order), then the
// others by memory in use; the rest are counted in a note.
Page build_cluster_page(const cluster::ClusterView& view, const PageSeries& series,
                        const std::string& prometheus, size_t max_nodes);

}  // namespace gpureap::report
