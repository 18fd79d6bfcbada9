// `gpureap cluster`: the cluster view over Prometheus's HTTP API (src/cluster).
#include "cli/cmd_cluster.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "cluster/cluster_text.h"
#include "cluster/prometheus_client.h"
#include "core/duration.h"
#include "output/snapshot_json.h"
#include "output/table.h"
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
  settings.stale_after = std::chrono::duration_cast<std::chrono::seconds>(*stale);
  if (o.unattributed_threshold) {
    auto t = doctor::parse_unattributed_threshold(*o.unattributed_threshold);
    if (!t) return core::Error{"--unattributed-threshold: " + t.error().message, t.error().hint};
    settings.unattributed = *t;
  }
  return ClusterPrepared{cluster::PrometheusClient(*target, auth, *timeout), settings,
                         cluster::Filters{o.nodes, o.gpus, o.pods}, *interval};
}

core::Result<cluster::ClusterView> cluster_ask(const ClusterPrepared& p) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto facts_body = p.client.query(cluster::facts_query(p.settings.job), now);
  if (!facts_body) return facts_body.error();
  auto facts = cluster::parse_vector_answer(*facts_body);
  if (!facts) return facts.error();
  auto missing_body = p.client.query(cluster::missing_query(p.settings.job), now);
  if (!missing_body) return missing_body.error();
  auto missing = cluster::parse_vector_answer(*missing_body);
  if (!missing) return missing.error();
  return cluster::build_view(*facts, *missing, now, p.settings, p.filters);
}

}  // namespace

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
      status = view->lines.empty() ? kExitOk : kExitFailed;
    } else {
      auto style = output::Style::for_stdout(g.no_color);
      shown = cluster::render_text(*view, style,
                                   output::fit_width(terminal_width(), std::getenv("COLUMNS")));
      status = view->lines.empty() ? kExitOk : kExitFailed;
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
