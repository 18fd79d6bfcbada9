#pragma once
// `gpureap report --prometheus`: the cluster view (src/cluster) as one page that stays readable
// at thousands of nodes: a table of the nodes with problems, worst first, each with what it has
// and the command to run on it; beside it one chart of the fleet's ghost and unattributed
// memory over time (Prometheus sums it); the healthy nodes only as a count.
#include <cstddef>
#include <string>

#include "cluster/cluster_view.h"
#include "cluster/prom_answer.h"
#include "report/page.h"

namespace gpureap::report {

// The metric summed over every GPU of the job's nodes: one series, however large the fleet.
std::string fleet_sum_query(const std::string& metric, const std::string& job);

struct PageSeries {
  cluster::Answer<cluster::RangeSeries> ghost, unattributed;  // fleet_sum_query's answers
  double start = 0, end = 0, step = 0;
};

// The table lists at most `max_nodes` nodes; a note counts the rest.
Page build_cluster_page(const cluster::ClusterView& view, const PageSeries& series,
                        const std::string& prometheus, size_t max_nodes);

}  // namespace gpureap::report
