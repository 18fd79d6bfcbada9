#pragma once
// `gpureap run [options] -- CMD [ARGS...]`: a supervised job that leaves nothing behind.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/global_options.h"

namespace gpureap::cli {

struct RunCliOptions {
  std::vector<std::string> command;
  std::string grace = "30s";
  std::string timeout;  // empty: none
  bool keep_descendants = false;
  std::string release_timeout = "60s";
  std::string sample = "1s";
  std::string report;
  bool quiet = false;
  bool fail_fast = false;
  std::string fail_fast_grace = "10s";
};

CLI::App* add_run_command(CLI::App& app, RunCliOptions& options);
int run_run(const GlobalOptions& global, const RunCliOptions& options);

}  // namespace gpureap::cli
