#pragma once
// `gpureap cluster`: every node's ghosts, leaks and stuck holders at a glance, from the
// Prometheus that already scrapes every node's daemon. No traffic to the nodes themselves.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/global_options.h"

namespace gpureap::cli {

struct ClusterOptions {
  std::string prometheus;                      // http(s)://HOST:PORT[/PREFIX]
  std::optional<std::string> token_file;       // a bearer token on its first line
  std::optional<std::string> basic_auth_file;  // user:password on its first line
  std::string job = "gpureap";
  std::vector<std::string> nodes;
  std::vector<unsigned> gpus;
  std::vector<std::string> pods;
  std::optional<std::string> unattributed_threshold;
  std::string stale_after = "2m";
  std::string timeout = "15s";
  bool watch = false;
  std::string interval = "10s";
  std::string via = "auto";  // cluster::CommandForm's name
};

// `gpureap report --prometheus URL`: the cluster view as a page (report's options, added to it).
struct ClusterReportOptions {
  std::optional<std::string> prometheus;
  std::optional<std::string> token_file;
  std::optional<std::string> basic_auth_file;
  std::string job = "gpureap";
  std::string via = "auto";
};

CLI::App* add_cluster_command(CLI::App& app, ClusterOptions& options);
void add_cluster_report_options(CLI::App& report, ClusterReportOptions& options);
// Writes the page to `out` ("-": stdout), over the span since `since`. Exit: 0 written; 2 usage
// error, Prometheus cannot be asked, or the page cannot be written.
int run_cluster_report(const GlobalOptions& global, const ClusterReportOptions& options,
                       const std::string& since, const std::string& out);
// Exit: 0 every node healthy (nothing to show); 1 lines shown (a split job included); 2 usage
// error, or Prometheus cannot be asked or its answer read.
int run_cluster(const GlobalOptions& global, const ClusterOptions& options);

}  // namespace gpureap::cli
