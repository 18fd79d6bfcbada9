#pragma once
// The cluster view: what Prometheus holds about every node's gpureap daemon, read into nodes
// and GPUs, and the lines worth a user's attention, ranked by the memory at stake, each with
// the command to run on that node. Pure: the answers in, the view out (the unit tests feed it
// canned answers, hostile ones included).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster/prom_answer.h"
#include "core/result.h"
#include "doctor/unattributed_threshold.h"

namespace gpureap::cluster {

// How a line's command reaches its node. Auto: `kubectl exec` into the node's gpureap pod where
// the target labels name that pod (`pod` and `namespace`, as the Prometheus Operator sets them),
// else ssh to the node's name. A `node` label only names the node: it chooses no form.
enum class CommandForm { Auto, Ssh, KubectlExec, KubectlDebug };
// "auto", "ssh", "kubectl-exec", "kubectl-debug".
inline constexpr const char* kCommandFormNames[] = {"auto", "ssh", "kubectl-exec", "kubectl-debug"};
std::optional<CommandForm> parse_command_form(const std::string& name);

struct ViewSettings {
  std::string job = "gpureap";
  CommandForm via = CommandForm::Auto;
  doctor::UnattributedThreshold unattributed;
  std::chrono::seconds stale_after{120};    // a sample older than this: the daemon is stuck
  std::chrono::seconds error_window{3600};  // GPU errors logged this recently are told
};

// Narrowing only, as `kill`'s filters: each one only removes lines, never adds or changes a
// figure. A node-wide line (down, stale, missing, driver down) passes --gpu, not --pod.
struct Filters {
  std::vector<std::string> nodes;  // node names or instances
  std::vector<unsigned> gpus;
  std::vector<std::string> pods;  // NAME or NAMESPACE/NAME
  bool empty() const { return nodes.empty() && gpus.empty() && pods.empty(); }
};

// A process with a problem, as gpureap_problem_process_memory_bytes names it.
struct ProblemProcess {
  std::string problem;  // ghost, leaked, stopped, uninterruptible
  pid_t pid = 0;
  uint64_t bytes = 0;
  std::vector<pid_t> keepers;
  size_t more_keepers = 0;  // keepers past those named
  std::string comm, user, pod_namespace, pod_name;
};

// A GPU error of the kernel log, as gpureap_gpu_kernel_last_event_timestamp_seconds names it.
struct GpuErrorSeen {
  std::string kind;  // the vendor parser's (the metric's `kind` label)
  unsigned code = 0;
  double time = 0;  // seconds since the epoch
  std::string pci_bus_id;
};

struct GpuFacts {
  unsigned index = 0;
  std::optional<uint64_t> used, total, ghost, unattributed;
  std::vector<ProblemProcess> processes;  // by problem, then PID
  std::vector<GpuErrorSeen> errors;
};

// A node's GPUs as Prometheus sums them (totals_query).
struct NodeTotals {
  size_t gpus = 0;
  uint64_t used = 0, total = 0;
};

struct Node {
  std::string instance;  // Prometheus's
  std::string name;      // the node's: its `node` label, else the instance without its port
  // What the views show: the name, or "name (instance)" where two daemons (two instances) have
  // the same name, as two daemons on one host do.
  std::string label;
  bool kubernetes = false;
  std::string pod, pod_namespace;   // the daemon's own pod, where the target labels say
  std::optional<double> up;         // Prometheus's up
  std::optional<double> driver_up;  // gpureap_up
  std::optional<double> sample_time;
  bool missing = false;                       // scraped in the last hour, not now
  bool names_processes = false;               // it exports gpureap_problem_process_memory_bytes
  std::map<unsigned, GpuFacts> gpus;          // those the answers name
  std::optional<NodeTotals> totals;           // all of them, summed
  std::vector<GpuErrorSeen> unplaced_errors;  // on a GPU no backend reports
};

// One line of the view: a node, or one GPU of it, with something to say. A GPU's command is
// `gpureap doctor --gpu N` on its node: doctor's remedies need the node's process tree, which
// these series do not carry (a keeper that runs a job of its own, a paused job that blocks a
// reset, the vendor's reset), so the view names no kill or reset of its own.
struct Line {
  size_t node = 0;                        // into ClusterView::nodes
  std::optional<unsigned> gpu;            // none: the whole node
  std::optional<uint64_t> at_stake;       // ghost, leaked, stopped, D-state and unattributed memory
  std::string state;                      // node-wide: down, missing, stale, driver-down; else ""
  std::vector<ProblemProcess> processes;  // the ones shown (after --pod)
  std::optional<uint64_t> ghost_unnamed;  // ghost memory whose PIDs the daemon does not export
  std::optional<uint64_t> unattributed;   // above the threshold
  std::vector<GpuErrorSeen> errors;
  double stale_seconds = 0;
  std::vector<std::string> command;  // words, each to be shell-quoted; empty: none
  std::string command_note;          // why there is none, or what it assumes
};

// A distributed job whose ranks on one node are gone while its ranks on another node live on and
// hold memory: the daemons' gpureap_job_ranks and gpureap_job_memory_bytes joined on the
// launcher's run id and user (cluster/split_jobs.h). The run id is a label the job's user sets,
// a claim: the view shows the join and sends the user to doctor on each node that holds memory,
// never composing a kill.
struct SplitJob {
  struct GoneOn {
    size_t node = 0;  // into ClusterView::nodes
    uint64_t ranks = 0;
  };
  struct HeldOn {
    size_t node = 0;
    uint64_t ranks = 0;  // live
    uint64_t bytes = 0;
    std::vector<std::string> command;  // doctor on the node; empty: none (command_note says why)
    std::string command_note;
  };
  std::string run_id, user;     // untrusted text: escape before showing
  std::vector<GoneOn> gone_on;  // by node name
  std::vector<HeldOn> held_on;  // the most memory first
  uint64_t held_bytes = 0;      // on every node of held_on
};

struct Healthy {
  size_t nodes = 0, gpus = 0;
  uint64_t used = 0, total = 0;
};

struct ClusterView {
  double time = 0;
  std::vector<Node> nodes;           // by name
  std::vector<Line> lines;           // ranked
  std::vector<SplitJob> split_jobs;  // the most memory held first
  Healthy healthy;
  size_t skipped_series = 0;
  std::vector<std::string> warnings;  // untrusted text: escape before showing
};

// A PromQL string literal: quoted, with quotes, backslashes and newlines escaped.
std::string promql_string(const std::string& s);

// The instant queries that gather the view. Prometheus does the sums, and what every GPU says
// is asked only of the nodes with something to say, so the answers grow with the problems, not
// with the fleet. They are independent and may run at the same time, but for the last:
//   targets: `up` with every target label, gpureap_up and the sample time, one series each per
//     target;
//   problems: the problem processes and the GPU errors' times;
//   unattributed: the GPUs with more unattributed memory than the threshold's absolute part
//     (the view applies the whole threshold);
//   totals: per target, the GPUs that report their used memory and the sums of their used and
//     total memory (the healthy summary), narrowed to `gpus` when given, one query each;
//   missing: the targets scraped within the last hour that are not scraped now;
//   gpu memory: the memory split (used, total, ghost, unattributed) of every GPU of the nodes
//     that ask_gpus_of() names from the answers to the first three.
std::string targets_query(const std::string& job);
std::string problems_query(const std::string& job);
std::string unattributed_query(const std::string& job,
                               const doctor::UnattributedThreshold& threshold);
std::vector<std::string> totals_queries(const std::string& job, const std::vector<unsigned>& gpus);
std::string missing_query(const std::string& job);
std::string gpu_memory_query(const std::string& job, const std::vector<std::string>& instances);

// The instances whose GPUs the view needs one by one: those with a problem process, a GPU error or
// unattributed memory, and those whose daemon exports no sample time (an older gpureap, whose
// ghost memory is shown without PIDs). Sorted, each once.
std::vector<std::string> ask_gpus_of(const Answer<Sample>& targets, const Answer<Sample>& problems,
                                     const Answer<Sample>& unattributed);

// The view from the answers to the queries above (`facts`, in any order) and to missing_query.
// A node with no totals is summed from the GPUs the answers name.
ClusterView build_view(const std::vector<const Answer<Sample>*>& facts,
                       const Answer<Sample>& missing, double now, const ViewSettings& settings,
                       const Filters& filters);
ClusterView build_view(const Answer<Sample>& facts, const Answer<Sample>& missing, double now,
                       const ViewSettings& settings, const Filters& filters);

// A scrape job with no series, or a --node that names none of its nodes: a mistyped name, which
// must not read as "nothing to show" (healthy). The error says which name and what exists.
std::optional<core::Error> unknown_scope(const ClusterView& view, const ViewSettings& settings,
                                         const Filters& filters);

// The words that run `gpureap_words` on the node, in the form `via` chooses (Auto: kubectl exec
// into the node's gpureap pod where the target labels name it, else ssh); none, with `note`
// saying why, where the node's names would not be read as names.
std::vector<std::string> command_on_node(const Node& n, CommandForm via,
                                         std::vector<std::string> gpureap_words, std::string& note);

// A name safe as an ssh destination or a kubectl argument: letters, digits, . _ - :, not
// starting with -.
bool plain_host_name(const std::string& name);

}  // namespace gpureap::cluster
