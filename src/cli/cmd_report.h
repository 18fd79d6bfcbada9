#pragma once
// `gpureap report`: GPU memory over time, with the ghosts in it, as one HTML page.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/cmd_cluster.h"
#include "cli/global_options.h"

namespace gpureap::cli {

struct ReportOptions {
  std::string since = "6h";              // how far back the daemon's history is asked for
  bool since_given = false;              // with --from: also trims the saved history
  std::string out = "report.html";       // "-": stdout
  std::optional<std::string> from;       // a saved /api/v1/history document
  std::optional<std::string> daemon;     // HOST:PORT; else the config's listen
  std::optional<std::string> config;     // the daemon config (listen, audit_log, token)
  std::optional<std::string> audit_log;  // else the config's audit_log
  size_t named = 5;                      // processes named per GPU
  ClusterReportOptions cluster;          // --prometheus: the cluster's page instead
  std::optional<std::string> until;      // the window's end (a duration ago or a time)
};

CLI::App* add_report_command(CLI::App& app, ReportOptions& options);
// Exit: 0 written; 2 usage error, the history cannot be had or read, the page cannot be written.
int run_report(const GlobalOptions& global, const ReportOptions& options);

}  // namespace gpureap::cli
