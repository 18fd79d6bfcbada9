#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/global_options.h"

namespace gpureap::cli {

struct DaemonCliOptions {
  std::optional<std::string> config;
  std::optional<std::string> listen;
  std::optional<std::string> check_config;
};

CLI::App* add_daemon_command(CLI::App& app, DaemonCliOptions& options);
// Exit: 0 stopped by SIGTERM/SIGINT (or --check-config: valid); 1 it could not serve;
// 2 configuration or environment error.
int run_daemon_command(const GlobalOptions& global, const DaemonCliOptions& options);

}  // namespace gpureap::cli
