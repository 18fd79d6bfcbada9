#include "cluster/cluster_view.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>
#include <tuple>

#include "metric/names.h"

namespace gpureap::cluster {

std::string promql_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

namespace {

std::string label(const Labels& l, const std::string& name) {
  auto it = l.find(name);
  return it == l.end() ? std::string() : it->second;
}

template <class T>
std::optional<T> whole_number(const std::string& s, T max) {
  T v{};
  if (s.empty() || s.size() > 12) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > max) return std::nullopt;
  return v;
}

// PIDs are at most 2^22 (pid_max's ceiling).
constexpr pid_t kPidMax = 4'194'304;

std::optional<uint64_t> bytes_of(double v) {
  if (!(v >= 0) || v > 1e18) return std::nullopt;
  return static_cast<uint64_t>(std::llround(v));
}

// "4250,4251,+3": named keepers and how many more; false when it is not that.
bool parse_keepers(const std::string& text, std::vector<pid_t>& out, size_t& more) {
  if (text.empty()) return true;
  size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty() && part.front() == '+') {
      auto n = whole_number<size_t>(part.substr(1), 1'000'000);
      if (!n || comma != std::string::npos) return false;
      more = *n;
      return true;
    }
    auto pid = whole_number<pid_t>(part, kPidMax);
    if (!pid || *pid <= 0 || out.size() >= 64) return false;
    out.push_back(*pid);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

// The node's name: the `node` label a Kubernetes scrape config sets, else the instance
// without its port ("host:9842" → host, "[::1]:9842" → ::1).
std::string node_name(const Labels& l) {
  for (const char* key : {"node", "kubernetes_node", "nodename"})
    if (auto v = label(l, key); !v.empty()) return v;
  std::string instance = label(l, "instance");
  if (!instance.empty() && instance.front() == '[') {
    auto close = instance.find(']');
    if (close != std::string::npos) return instance.substr(1, close - 1);
  }
  auto colon = instance.rfind(':');
  if (colon != std::string::npos && instance.find(':') == colon && colon + 1 < instance.size() &&
      whole_number<unsigned>(instance.substr(colon + 1), 65535))
    return instance.substr(0, colon);
  return instance;
}

bool says_kubernetes(const Labels& l) {
  for (const char* key : {"node", "kubernetes_node", "pod", "kubernetes_pod_name"})
    if (!label(l, key).empty()) return true;
  return false;
}

bool plain_k8s_name(const std::string& s) {
  if (s.empty() || s.size() > 253 || !std::isalnum(static_cast<unsigned char>(s.front())))
    return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '-' || c == '.';
  });
}

bool on_pod(const ProblemProcess& p, const std::vector<std::string>& pods) {
  for (const auto& want : pods) {
    if (!p.pod_name.empty() && want == p.pod_name) return true;
    if (!p.pod_name.empty() && want == p.pod_namespace + "/" + p.pod_name) return true;
  }
  return false;
}

const std::set<std::string> kProblems{"ghost", "leaked", "stopped", "uninterruptible"};

// Why a line gives no command: its node's name would not be read as one.
constexpr const char* kNoHostName = "the node's name is no host name: no command is given for it";
constexpr const char* kNoK8sNodeName =
    "the node's name is no Kubernetes node name: no command is given for it";

bool names_pod(const Node& n) {
  return plain_k8s_name(n.pod) && plain_k8s_name(n.pod_namespace);
}

CommandForm form_for(const Node& n, CommandForm via) {
  if (via != CommandForm::Auto) return via;
  return names_pod(n) ? CommandForm::KubectlExec : CommandForm::Ssh;
}

class Builder {
 public:
  Builder(double now, const ViewSettings& s) : now_(now), settings_(s) {}

  void facts(const std::vector<const Answer<Sample>*>& answers) {
    // `up` first: it carries the target labels (node, pod) that name the node.
    for (const auto* a : answers)
      for (const auto& s : a->series)
        if (label(s.labels, "__name__") == "up") node_for(s.labels).up = s.value;
    for (const auto* a : answers) {
      view_.skipped_series += a->skipped;
      for (const auto& w : a->warnings) view_.warnings.push_back(w);
      for (const auto& s : a->series) sample(s);
    }
  }

  void missing(const Answer<Sample>& a) {
    for (const auto& s : a.series) {
      auto& n = node_for(s.labels);
      if (!n.up) n.missing = true;
    }
  }

  ClusterView finish(const Filters& filters) {
    std::stable_sort(view_.nodes.begin(), view_.nodes.end(), [](const Node& a, const Node& b) {
      return std::tie(a.name, a.instance) < std::tie(b.name, b.instance);
    });
    index_.clear();
    std::map<std::string, size_t> named;
    for (const auto& n : view_.nodes) ++named[n.name];
    for (auto& n : view_.nodes)
      n.label =
          named[n.name] > 1 && n.name != n.instance ? n.name + " (" + n.instance + ")" : n.name;
    for (auto& n : view_.nodes)
      for (auto& [i, g] : n.gpus)
        std::sort(g.processes.begin(), g.processes.end(), [](const auto& a, const auto& b) {
          return std::tie(a.problem, a.pid) < std::tie(b.problem, b.pid);
        });
    for (size_t i = 0; i < view_.nodes.size(); ++i) lines_of(i, filters);
    std::stable_sort(view_.lines.begin(), view_.lines.end(), [&](const Line& a, const Line& b) {
      // Known memory first, the most first; then the nodes that say nothing (down, missing),
      // by name and GPU.
      auto ka = a.at_stake.value_or(0), kb = b.at_stake.value_or(0);
      if (ka != kb) return ka > kb;
      const auto& na = view_.nodes[a.node].name;
      const auto& nb = view_.nodes[b.node].name;
      if (na != nb) return na < nb;
      return a.gpu.value_or(~0u) < b.gpu.value_or(~0u);
    });
    return std::move(view_);
  }

 private:
  Node& node_for(const Labels& l) {
    const std::string instance = label(l, "instance");
    auto it = index_.find(instance);
    if (it != index_.end()) return view_.nodes[it->second];
    Node n;
    n.instance = instance;
    n.name = node_name(l);
    if (n.name.empty()) n.name = instance;
    n.kubernetes = says_kubernetes(l);
    n.pod = label(l, "pod").empty() ? label(l, "kubernetes_pod_name") : label(l, "pod");
    n.pod_namespace =
        label(l, "namespace").empty() ? label(l, "kubernetes_namespace") : label(l, "namespace");
    index_.emplace(instance, view_.nodes.size());
    view_.nodes.push_back(std::move(n));
    return view_.nodes.back();
  }

  GpuFacts* gpu_of(Node& n, const Labels& l) {
    auto index = whole_number<unsigned>(label(l, metric::label::kGpu), 1u << 20);
    if (!index) return nullptr;
    auto& g = n.gpus[*index];
    g.index = *index;
    return &g;
  }

  void sample(const Sample& s) {
    const std::string name = label(s.labels, "__name__");
    if (name == "up") return;
    auto& n = node_for(s.labels);
    if (name.empty()) {
      totals(n, s);
    } else if (name == metric::kUp) {
      n.driver_up = s.value;
    } else if (name == metric::kSampleTimestamp) {
      n.sample_time = s.value;
    } else if (name == metric::kGpuKernelLastEvent) {
      if (s.value < now_ - static_cast<double>(settings_.error_window.count())) return;
      auto code = whole_number<unsigned>(label(s.labels, metric::label::kCode), 1u << 16);
      if (!code) return;
      GpuErrorSeen x{label(s.labels, metric::label::kKind), *code, s.value,
                     label(s.labels, metric::label::kPciBusId)};
      if (auto* g = gpu_of(n, s.labels))
        g->errors.push_back(std::move(x));
      else
        n.unplaced_errors.push_back(std::move(x));
    } else if (name == metric::kProblemProcessMemory) {
      n.names_processes = true;
      ProblemProcess p;
      p.problem = label(s.labels, metric::label::kProblem);
      auto pid = whole_number<pid_t>(label(s.labels, metric::label::kPid), kPidMax);
      auto bytes = bytes_of(s.value);
      auto* g = gpu_of(n, s.labels);
      if (!g || !pid || *pid <= 0 || !bytes || !kProblems.count(p.problem) ||
          !parse_keepers(label(s.labels, metric::label::kKeepers), p.keepers, p.more_keepers)) {
        ++view_.skipped_series;
        return;
      }
      p.pid = *pid;
      p.bytes = *bytes;
      p.comm = label(s.labels, metric::label::kComm);
      p.user = label(s.labels, metric::label::kUser);
      p.pod_namespace = label(s.labels, metric::label::kPodNamespace);
      p.pod_name = label(s.labels, metric::label::kPodName);
      g->processes.push_back(std::move(p));
    } else if (name == metric::kGpuMemoryUsed || name == metric::kGpuMemoryTotal ||
               name == metric::kGpuMemoryGhost || name == metric::kGpuMemoryUnattributed) {
      auto* g = gpu_of(n, s.labels);
      auto bytes = bytes_of(s.value);
      if (!g || !bytes) {
        ++view_.skipped_series;
        return;
      }
      if (name == metric::kGpuMemoryUsed) g->used = bytes;
      if (name == metric::kGpuMemoryTotal) g->total = bytes;
      if (name == metric::kGpuMemoryGhost) g->ghost = bytes;
      if (name == metric::kGpuMemoryUnattributed) g->unattributed = bytes;
    }
  }

  // A sum of totals_query: `sum` says which.
  void totals(Node& n, const Sample& s) {
    const std::string of = label(s.labels, "sum");
    auto bytes = bytes_of(s.value);
    if (!bytes || (of != "gpus" && of != "used" && of != "total")) {
      ++view_.skipped_series;
      return;
    }
    auto& t = n.totals ? *n.totals : n.totals.emplace();
    if (of == "gpus") t.gpus = static_cast<size_t>(*bytes);
    if (of == "used") t.used = *bytes;
    if (of == "total") t.total = *bytes;
  }

  bool node_passes(const Node& n, const Filters& f) const {
    if (f.nodes.empty()) return true;
    return std::any_of(f.nodes.begin(), f.nodes.end(),
                       [&](const std::string& w) { return w == n.name || w == n.instance; });
  }

  // The command that starts `gpureap_words` on the node, in the form --via chose.
  std::vector<std::string> on_node(const Node& n, std::vector<std::string> gpureap_words,
                                   std::string& note) const {
    return command_on_node(n, settings_.via, std::move(gpureap_words), note);
  }

  // A daemon that says nothing: where to look at it, in the form chosen.
  std::vector<std::string> daemon_status(const Node& n, std::string& note) const {
    if (form_for(n, settings_.via) == CommandForm::Ssh) {
      if (plain_host_name(n.name)) return {"ssh", "-t", n.name, "systemctl", "status", "gpureap"};
      note = kNoHostName;
      return {};
    }
    if (plain_k8s_name(n.name))
      return {"kubectl",
              "get",
              "pods",
              "-A",
              "-o",
              "wide",
              "--field-selector",
              "spec.nodeName=" + n.name};
    note = kNoK8sNodeName;
    return {};
  }

  void node_line(size_t i, const std::string& state, const Filters& f) {
    const auto& n = view_.nodes[i];
    if (!f.pods.empty()) return;
    Line line;
    line.node = i;
    line.state = state;
    if (state == "stale") line.stale_seconds = now_ - *n.sample_time;
    if (state == "down" || state == "missing")
      line.command = daemon_status(n, line.command_note);
    else
      line.command = on_node(n, {"gpureap", "doctor"}, line.command_note);
    view_.lines.push_back(std::move(line));
  }

  void lines_of(size_t i, const Filters& f) {
    const auto& n = view_.nodes[i];
    if (!node_passes(n, f)) return;
    // A node that says nothing now says nothing of its GPUs either.
    if (n.missing) return node_line(i, "missing", f);
    if (n.up && *n.up == 0) return node_line(i, "down", f);
    if (n.sample_time && now_ - *n.sample_time > static_cast<double>(settings_.stale_after.count()))
      return node_line(i, "stale", f);
    bool said = false;
    if (n.driver_up && *n.driver_up == 0) {
      node_line(i, "driver-down", f);
      said = true;
    }
    if (!n.unplaced_errors.empty() && f.pods.empty() && f.gpus.empty()) {
      Line line;
      line.node = i;
      line.errors = n.unplaced_errors;
      line.command = on_node(n, {"gpureap", "doctor"}, line.command_note);
      view_.lines.push_back(std::move(line));
      said = true;
    }
    size_t healthy_gpus = 0;
    uint64_t used = 0, total = 0;
    for (const auto& [index, g] : n.gpus) {
      if (!f.gpus.empty() && std::find(f.gpus.begin(), f.gpus.end(), index) == f.gpus.end())
        continue;
      if (gpu_line(i, g, f)) {
        said = true;
      } else {
        ++healthy_gpus;
        used += g.used.value_or(0);
        total += g.total.value_or(0);
      }
    }
    if (!said && f.pods.empty()) {
      if (n.totals) {
        healthy_gpus = n.totals->gpus;
        used = n.totals->used;
        total = n.totals->total;
      }
      ++view_.healthy.nodes;
      view_.healthy.gpus += healthy_gpus;
      view_.healthy.used += used;
      view_.healthy.total += total;
    }
  }

  // True when the GPU has something to say (whether or not --pod shows it).
  bool gpu_line(size_t i, const GpuFacts& g, const Filters& f) {
    const auto& n = view_.nodes[i];
    Line line;
    line.node = i;
    line.gpu = g.index;
    uint64_t stake = 0;
    uint64_t named_ghost = 0;
    for (const auto& p : g.processes) {
      stake += p.bytes;
      if (p.problem == "ghost" || p.problem == "leaked") named_ghost += p.bytes;
    }
    // Ghost memory the daemon does not name PIDs for (a daemon older than the metric).
    // A daemon that exports its sample time also exports every ghost's PID.
    if (g.ghost && *g.ghost > named_ghost && !n.names_processes && !n.sample_time) {
      line.ghost_unnamed = *g.ghost - named_ghost;
      stake += *line.ghost_unnamed;
    }
    if (g.unattributed && *g.unattributed > settings_.unattributed.for_total(g.total)) {
      line.unattributed = g.unattributed;
      stake += *g.unattributed;
    }
    line.errors = g.errors;
    const bool something =
        !g.processes.empty() || line.ghost_unnamed || line.unattributed || !line.errors.empty();
    if (!something) return false;
    for (const auto& p : g.processes)
      if (f.pods.empty() || on_pod(p, f.pods)) line.processes.push_back(p);
    if (!f.pods.empty() && line.processes.empty()) return true;
    line.at_stake = stake;

    // Doctor on the node, never a kill or reset composed here: the remedy depends on what only
    // the node sees (which keeper runs a job of its own, a server that runs a gone client's work,
    // a paused job that blocks a reset, the vendor's reset, an error no reset recovers), so a
    // command built from these series could contradict doctor, or sweep a paused job in.
    line.command =
        on_node(n, {"gpureap", "doctor", "--gpu", std::to_string(g.index)}, line.command_note);
    view_.lines.push_back(std::move(line));
    return true;
  }

  double now_;
  const ViewSettings& settings_;
  ClusterView view_;
  std::map<std::string, size_t> index_;
};

}  // namespace

std::optional<CommandForm> parse_command_form(const std::string& name) {
  for (size_t i = 0; i < std::size(kCommandFormNames); ++i)
    if (name == kCommandFormNames[i]) return static_cast<CommandForm>(i);
  return std::nullopt;
}

std::vector<std::string> command_on_node(const Node& n, CommandForm via,
                                         std::vector<std::string> gpureap_words,
                                         std::string& note) {
  std::vector<std::string> w;
  switch (form_for(n, via)) {
    case CommandForm::KubectlExec:
      if (!names_pod(n)) {
        note = "the target labels name no gpureap pod (pod, namespace) to exec into";
        return {};
      }
      w = {"kubectl", "exec", "-it", "-n", n.pod_namespace, n.pod, "--"};
      break;
    case CommandForm::KubectlDebug:
      if (!plain_k8s_name(n.name)) {
        note = kNoK8sNodeName;
        return {};
      }
      w = {"kubectl",         "debug", "node/" + n.name, "-it",  "--profile=sysadmin",
           "--image=busybox", "--",    "chroot",         "/host"};
      break;
    case CommandForm::Ssh:
    case CommandForm::Auto:
      if (!plain_host_name(n.name)) {
        note = kNoHostName;
        return {};
      }
      w = {"ssh", "-t", n.name, "sudo"};
      break;
  }
  w.insert(w.end(), gpureap_words.begin(), gpureap_words.end());
  return w;
}

bool plain_host_name(const std::string& name) {
  if (name.empty() || name.size() > 253 || name.front() == '-') return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':';
  });
}

namespace {

// The names as a PromQL regex that matches any of them.
std::string any_of(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* n : names) out += (out.empty() ? "" : "|") + std::string(n);
  return out;
}

const std::string kMemoryMetrics =
    any_of({metric::kGpuMemoryUsed, metric::kGpuMemoryTotal, metric::kGpuMemoryGhost,
            metric::kGpuMemoryUnattributed});
const std::string kProblemMetrics =
    any_of({metric::kProblemProcessMemory, metric::kGpuKernelLastEvent});

// `s` matched literally by a PromQL regex (RE2, anchored).
std::string regex_literal(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::strchr("\\.+*?()|[]{}^$", c) && c != '\0') out += '\\';
    out += c;
  }
  return out;
}

std::string selector(const std::string& job, const std::string& names,
                     const std::string& more = "") {
  return "{job=" + promql_string(job) + ",__name__=~" + promql_string(names) + more + "}";
}

}  // namespace

std::string targets_query(const std::string& job) {
  return selector(job, any_of({"up", metric::kUp, metric::kSampleTimestamp}));
}

std::string problems_query(const std::string& job) {
  return selector(job, kProblemMetrics);
}

std::string unattributed_query(const std::string& job,
                               const doctor::UnattributedThreshold& threshold) {
  return selector(job, metric::kGpuMemoryUnattributed) + " > " +
         std::to_string(threshold.bytes.value_or(0));
}

std::vector<std::string> totals_queries(const std::string& job, const std::vector<unsigned>& gpus) {
  std::string only;
  for (unsigned g : gpus) only += (only.empty() ? "" : "|") + std::to_string(g);
  const std::string narrow = gpus.empty() ? "" : ",gpu=~\"" + only + "\"";
  // label_replace names each sum (the view reads the `sum` label).
  auto named = [&](const char* how, const char* metric, const char* what) {
    return std::string("label_replace(") + how + " by (instance) (" +
           selector(job, metric, narrow) + "), \"sum\", \"" + what + "\", \"\", \"\")";
  };
  return {named("count", metric::kGpuMemoryUsed, "gpus"),
          named("sum", metric::kGpuMemoryUsed, "used"),
          named("sum", metric::kGpuMemoryTotal, "total")};
}

std::string gpu_memory_query(const std::string& job, const std::vector<std::string>& instances) {
  std::string any;
  for (const auto& i : instances) any += (any.empty() ? "" : "|") + regex_literal(i);
  return selector(job, kMemoryMetrics, ",instance=~" + promql_string(any));
}

std::vector<std::string> ask_gpus_of(const Answer<Sample>& targets, const Answer<Sample>& problems,
                                     const Answer<Sample>& unattributed) {
  std::set<std::string> out, timed;
  for (const auto& s : targets.series)
    if (label(s.labels, "__name__") == metric::kSampleTimestamp)
      timed.insert(label(s.labels, "instance"));
  for (const auto& s : targets.series)
    if (label(s.labels, "__name__") == metric::kUp && !timed.count(label(s.labels, "instance")))
      out.insert(label(s.labels, "instance"));
  for (const auto* a : {&problems, &unattributed})
    for (const auto& s : a->series) out.insert(label(s.labels, "instance"));
  return {out.begin(), out.end()};
}

std::string missing_query(const std::string& job) {
  const std::string up = "up{job=" + promql_string(job) + "}";
  return "max_over_time(" + up + "[1h]) unless on(instance) " + up;
}

ClusterView build_view(const std::vector<const Answer<Sample>*>& facts,
                       const Answer<Sample>& missing, double now, const ViewSettings& settings,
                       const Filters& filters) {
  Builder b(now, settings);
  b.facts(facts);
  b.missing(missing);
  ClusterView v = b.finish(filters);
  v.time = now;
  return v;
}

std::optional<core::Error> unknown_scope(const ClusterView& view, const ViewSettings& settings,
                                         const Filters& filters) {
  if (view.nodes.empty())
    return core::Error{"Prometheus has no series of the scrape job " + promql_string(settings.job),
                       "check --job (the job that scrapes the gpureap daemons; default gpureap) "
                       "and that Prometheus scrapes them"};
  std::vector<std::string> unknown;
  for (const auto& wanted : filters.nodes)
    if (std::none_of(view.nodes.begin(), view.nodes.end(),
                     [&](const Node& n) { return wanted == n.name || wanted == n.instance; }))
      unknown.push_back(wanted);
  if (unknown.empty()) return std::nullopt;
  constexpr size_t kNamed = 8;
  std::string known;
  for (size_t i = 0; i < view.nodes.size() && i < kNamed; ++i)
    known += (i ? ", " : "") + view.nodes[i].name;
  if (view.nodes.size() > kNamed) known += ", ...";
  std::string names;
  for (const auto& u : unknown) names += (names.empty() ? "" : ", ") + u;
  return core::Error{std::string(unknown.size() == 1 ? "no node " : "no nodes ") + names +
                         " in the job " + promql_string(settings.job),
                     "--node takes a node's name or its instance; the job's nodes are " + known};
}

ClusterView build_view(const Answer<Sample>& facts, const Answer<Sample>& missing, double now,
                       const ViewSettings& settings, const Filters& filters) {
  return build_view(std::vector<const Answer<Sample>*>{&facts}, missing, now, settings, filters);
}

}  // namespace gpureap::cluster
