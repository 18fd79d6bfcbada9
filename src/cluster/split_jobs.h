#pragma once
// Jobs split across nodes: a distributed job whose ranks on one node are gone while its ranks on
// another node live on and hold GPU memory, waiting for peers that will never answer. No node
// sees it alone: the node that lost ranks holds little, the node that holds the memory sees a
// whole job. Prometheus joins the daemons' series on the launcher's run id (torchrun's
// TORCHELASTIC_RUN_ID) and user, and the view names the nodes and doctor's command on each.
//
// The run id is a label the job's user writes, so the join is a claim: the view shows it and
// never turns it into an action. It joins on the user as well as the run id (a run id another
// user reuses on another node is another job), and never on an empty run id or torchrun's
// default "none", which every job launched without --rdzv-id shares.
#include <string>

#include "cluster/cluster_view.h"
#include "cluster/prom_answer.h"

namespace gpureap::cluster {

// Per node (instance), run id and user: the ranks live and gone (gpureap_job_ranks, `state`),
// of the jobs that have gone ranks on some node. Prometheus does the sums and the join, so the
// answer grows with the split jobs, not with the fleet's jobs.
std::string split_ranks_query(const std::string& job);
// Per node, run id and user: the memory the live ranks hold (gpureap_job_memory_bytes), of the
// same jobs.
std::string split_memory_query(const std::string& job);

// The split jobs of the answers to the two queries above, added to the view (whose nodes name
// the instances), the most memory held first. A series with a run id of "" or "none", or with
// an instance the view does not know, is skipped (Prometheus's answer is untrusted). Filters
// narrow only: --node keeps a job one of whose nodes it names; --gpu keeps them all (a job is
// no GPU's); --pod keeps none.
void add_split_jobs(ClusterView& view, const Answer<Sample>& ranks, const Answer<Sample>& memory,
                    const ViewSettings& settings, const Filters& filters);

}  // namespace gpureap::cluster
