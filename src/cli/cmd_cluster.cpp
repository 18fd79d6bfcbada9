// `gpureap cluster`: the cluster view over Prometheus's HTTP API (src/cluster).
#include "cli/cmd_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <thread>
#include <tuple>

#include "cli/page_file.h"
#include "cluster/cluster_text.h"
#include "cluster/prometheus_client.h"
#include "cluster/split_jobs.h"
#include "core/duration.h"
#include "export/history_since.h"
#include "metric/names.h"
#include "output/snapshot_json.h"
#include "output/table.h"
#include "report/cluster_page.h"
#include "report/html_page.h"
#include "text/byte_format.h"
#include "text/escape.h"

namespace gpureap::cli {
namespace {

struct ClusterPrepared {
  cluster::PrometheusClient client;
  cluster::ViewSettings settings;
  cluster::Filters filters;
  std::chrono::milliseconds interval;
};

core::Result<std::chrono::milliseconds> cluster_duration(const char* name, const std::string& v) {
  auto d = core::parse_duration(v);
  if (!d || d->count() <= 0)
    return core::Error{std::string(name) + " " + text::terminal_safe(v) + " is not a duration",
                       "write it as 500ms, 15s, 2m"};
  return *d;
}

core::Result<ClusterPrepared> cluster_prepare(const ClusterOptions& o) {
  auto target = cluster::parse_prometheus_url(o.prometheus);
  if (!target) return target.error();
  cluster::PrometheusAuth auth;
  if (o.token_file) {
    auto t = cluster::read_token_file(*o.token_file);
    if (!t) return t.error();
    auth.bearer_token = *t;
  }
  if (o.basic_auth_file) {
    auto b = cluster::read_basic_auth_file(*o.basic_auth_file);
    if (!b) return b.error();
    auth.basic = *b;
  }
  auto timeout = cluster_duration("--timeout", o.timeout);
  if (!timeout) return timeout.error();
  auto stale = cluster_duration("--stale-after", o.stale_after);
  if (!stale) return stale.error();
  auto interval = cluster_duration("--interval", o.interval);
  if (!interval) return interval.error();
  cluster::ViewSettings settings;
  settings.job = o.job;
  settings.via = cluster::parse_command_form(o.via).value_or(cluster::CommandForm::Auto);
  settings.stale_after = std::chrono::duration_cast<std::chrono::seconds>(*stale);
  if (o.unattributed_threshold) {
    auto t = doctor::parse_unattributed_threshold(*o.unattributed_threshold);
    if (!t) return core::Error{"--unattributed-threshold: " + t.error().message, t.error().hint};
    settings.unattributed = *t;
  }
  return ClusterPrepared{cluster::PrometheusClient(*target, auth, *timeout), settings,
                         cluster::Filters{o.nodes, o.gpus, o.pods}, *interval};
}

using Answer = cluster::Answer<cluster::Sample>;

// Each query on its own thread, so that Prometheus evaluates them side by side; the answers in
// the queries' order, or the first query's error.
core::Result<std::vector<Answer>> ask_all(const ClusterPrepared& p,
                                          const std::vector<std::string>& queries, double now,
                                          const cluster::AnswerLimits& limits) {
  std::vector<std::future<core::Result<Answer>>> pending;
  for (const auto& q : queries)
    pending.push_back(std::async(
        std::launch::async, [&p, &q, &limits, now] { return p.client.query(q, now, limits); }));
  std::vector<core::Result<Answer>> got;
  for (auto& f : pending) got.push_back(f.get());
  std::vector<Answer> out;
  for (auto& a : got) {
    if (!a) return a.error();
    out.push_back(std::move(*a));
  }
  return out;
}

core::Result<cluster::ClusterView> cluster_ask(const ClusterPrepared& p) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto& job = p.settings.job;
  cluster::AnswerLimits limits;
  cluster::KeptBudget budget(limits.max_kept_bytes);  // for the answers together
  limits.budget = &budget;
  std::vector<std::string> queries{cluster::targets_query(job),
                                   cluster::problems_query(job),
                                   cluster::unattributed_query(job, p.settings.unattributed),
                                   cluster::missing_query(job),
                                   cluster::split_ranks_query(job),
                                   cluster::split_memory_query(job)};
  constexpr size_t kFirstTotals = 6;
  for (auto& q : cluster::totals_queries(job, p.filters.gpus)) queries.push_back(std::move(q));
  auto first = ask_all(p, queries, now, limits);
  if (!first) return first.error();
  const auto& [targets, problems, unattributed] = std::tie((*first)[0], (*first)[1], (*first)[2]);
  // Then every GPU of the nodes with something to say, a few hundred nodes a query (each
  // instance is in the URL).
  const auto instances = cluster::ask_gpus_of(targets, problems, unattributed);
  constexpr size_t kPerQuery = 256;
  std::vector<std::string> gpu_queries;
  for (size_t i = 0; i < instances.size(); i += kPerQuery)
    gpu_queries.push_back(cluster::gpu_memory_query(
        job,
        {instances.begin() + static_cast<ptrdiff_t>(i),
         instances.begin() + static_cast<ptrdiff_t>(std::min(instances.size(), i + kPerQuery))}));
  auto gpus = ask_all(p, gpu_queries, now, limits);
  if (!gpus) return gpus.error();
  std::vector<const Answer*> facts{&targets, &problems};
  for (size_t i = kFirstTotals; i < first->size(); ++i) facts.push_back(&(*first)[i]);
  for (const auto& a : *gpus) facts.push_back(&a);
  auto view = cluster::build_view(facts, (*first)[3], now, p.settings, p.filters);
  cluster::add_split_jobs(view, (*first)[4], (*first)[5], p.settings, p.filters);
  if (auto unknown = cluster::unknown_scope(view, p.settings, p.filters)) return *unknown;
  return view;
}

core::Result<cluster::PrometheusAuth> cluster_auth(const std::optional<std::string>& token_file,
                                                   const std::optional<std::string>& basic_file) {
  cluster::PrometheusAuth auth;
  if (token_file) {
    auto t = cluster::read_token_file(*token_file);
    if (!t) return t.error();
    auth.bearer_token = *t;
  }
  if (basic_file) {
    auto b = cluster::read_basic_auth_file(*basic_file);
    if (!b) return b.error();
    auth.basic = *b;
  }
  return auth;
}

// How each line's command reaches its node (cluster::CommandForm).
CLI::Option* add_via_option(CLI::App& app, std::string& via) {
  return app
      .add_option("--via", via,
                  "how the commands reach a node: ssh, kubectl-exec (the node's gpureap pod), "
                  "kubectl-debug (a debug pod on the node), or auto: kubectl-exec where the "
                  "target labels name the pod, else ssh")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(cluster::kCommandFormNames),
                                                     std::end(cluster::kCommandFormNames))))
      ->capture_default_str();
}

}  // namespace

void add_cluster_report_options(CLI::App& report, ClusterReportOptions& o) {
  auto* prometheus = report.add_option(
      "--prometheus", o.prometheus,
      "draw the cluster (every node's memory over time) from this Prometheus instead");
  auto* token = report.add_option("--token-file", o.token_file,
                                  "a file with the bearer token Prometheus wants");
  token->needs(prometheus);
  report
      .add_option("--basic-auth-file", o.basic_auth_file,
                  "a file with user:password for Prometheus")
      ->needs(prometheus)
      ->excludes(token);
  report.add_option("--job", o.job, "the scrape job of the daemons in Prometheus")
      ->default_str("gpureap")
      ->needs(prometheus);
  add_via_option(report, o.via)->needs(prometheus);
}

// The page's table of nodes with problems: a screenful or two; `gpureap cluster` lists the rest.
constexpr size_t kPageNodes = 100;

int run_cluster_report(const GlobalOptions& g, const ClusterReportOptions& o,
                       const std::string& since_text, const std::string& out) {
  (void)g;
  auto target = cluster::parse_prometheus_url(*o.prometheus);
  if (!target) return fail(target.error());
  auto auth = cluster_auth(o.token_file, o.basic_auth_file);
  if (!auth) return fail(auth.error());
  const auto now_tp = std::chrono::system_clock::now();
  auto since = exporter::parse_since(since_text, now_tp);
  if (!since)
    return fail({"--since " + text::terminal_safe(since_text) + " is neither a duration nor a time",
                 since.error().hint});
  cluster::PrometheusClient client(*target, *auth, std::chrono::seconds(30));
  cluster::ViewSettings settings;
  settings.job = o.job;
  settings.via = cluster::parse_command_form(o.via).value_or(cluster::CommandForm::Auto);
  ClusterPrepared p{client, settings, {}, std::chrono::seconds(1)};
  auto view = cluster_ask(p);
  if (!view) return fail(view.error());
  report::PageSeries s;
  s.end = view->time;
  s.start = std::chrono::duration<double>(since->time_since_epoch()).count();
  if (!(s.start < s.end))
    return fail({"--since " + text::terminal_safe(since_text) + " is not in the past", ""});
  // About 240 points per chart, never finer than Prometheus's usual 15 s scrape.
  s.step = std::max(15.0, std::ceil((s.end - s.start) / 240));
  const std::pair<cluster::Answer<cluster::RangeSeries>*, const char*> wanted[] = {
      {&s.ghost, metric::kGpuMemoryGhost}, {&s.unattributed, metric::kGpuMemoryUnattributed}};
  // Sums over the fleet: one series each, whatever the number of nodes; an answer of more is
  // refused long before it could cost memory.
  cluster::AnswerLimits limits;
  cluster::KeptBudget budget(size_t{16} << 20);
  limits.budget = &budget;
  for (const auto& [into, metric] : wanted) {
    auto a =
        client.query_range(report::fleet_sum_query(metric, o.job), s.start, s.end, s.step, limits);
    if (!a) return fail(a.error());
    *into = std::move(*a);
  }
  auto page = report::build_cluster_page(*view, s, client.where(), kPageNodes);
  auto written = write_page(out, report::render_html(page));
  if (!written) return fail(written.error());
  if (out != "-")
    std::cerr << "gpureap: wrote " << text::terminal_safe(out) << " (" << view->nodes.size()
              << (view->nodes.size() == 1 ? " node, " : " nodes, ") << view->lines.size()
              << (view->lines.size() == 1 ? " line, " : " lines, ") << text::human_bytes(*written)
              << "): open it in a browser\n";
  return kExitOk;
}

CLI::App* add_cluster_command(CLI::App& app, ClusterOptions& o) {
  auto* cmd = app.add_subcommand(
      "cluster",
      "every node's ghosts, leaks and stuck holders, from the Prometheus that scrapes the "
      "daemons");
  cmd->add_option("--prometheus", o.prometheus,
                  "the Prometheus server: http(s)://HOST:PORT, with its path prefix if any")
      ->required();
  auto* token = cmd->add_option("--token-file", o.token_file,
                                "a file whose first line is the bearer token Prometheus wants");
  cmd->add_option("--basic-auth-file", o.basic_auth_file,
                  "a file whose first line is user:password for Prometheus")
      ->excludes(token);
  cmd->add_option("--job", o.job, "the scrape job of the gpureap daemons")->capture_default_str();
  cmd->add_option("--node", o.nodes, "only this node (its name or instance); repeatable");
  cmd->add_option("--gpu", o.gpus, "only this GPU index on each node; repeatable");
  cmd->add_option("--pod", o.pods,
                  "only the processes of this pod (NAME or NAMESPACE/NAME); repeatable");
  cmd->add_option("--unattributed-threshold", o.unattributed_threshold,
                  "unattributed memory shown above this: 1GiB, 5%, or both (default: doctor's)");
  cmd->add_option("--stale-after", o.stale_after,
                  "a daemon whose last sample is older than this reads as stale")
      ->capture_default_str();
  cmd->add_option("--timeout", o.timeout, "the most one query to Prometheus may take")
      ->capture_default_str();
  add_via_option(*cmd, o.via);
  cmd->add_flag("--watch", o.watch, "redraw every --interval until interrupted");
  cmd->add_option("--interval", o.interval, "with --watch: the time between two views")
      ->capture_default_str();
  return cmd;
}

int run_cluster(const GlobalOptions& g, const ClusterOptions& o) {
  if (g.csv) return fail({"gpureap cluster has no CSV output", "use --json"});
  auto prepared = cluster_prepare(o);
  if (!prepared) return fail(prepared.error());
  const auto& p = *prepared;
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  for (;;) {
    auto view = cluster_ask(p);
    std::string shown;
    int status = kExitUsage;
    if (!view) {
      if (!o.watch) return fail(view.error());
      shown = "gpureap: " + view.error().text() + "\n";
    } else if (g.json) {
      shown = output::dump_json(cluster::to_json(*view, p.client.where(), p.settings)) + "\n";
      status = view->lines.empty() && view->split_jobs.empty() ? kExitOk : kExitFailed;
    } else {
      auto style = output::Style::for_stdout(g.no_color);
      shown = cluster::render_text(*view, style,
                                   output::fit_width(terminal_width(), std::getenv("COLUMNS")));
      status = view->lines.empty() && view->split_jobs.empty() ? kExitOk : kExitFailed;
    }
    if (!o.watch) {
      std::cout << shown << std::flush;
      return status;
    }
    if (tty && !g.json) std::cout << "\x1b[H\x1b[2J";
    std::cout << shown << std::flush;
    std::this_thread::sleep_for(p.interval);
  }
}

}  // namespace gpureap::cli
