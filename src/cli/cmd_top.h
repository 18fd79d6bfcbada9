#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "cli/global_options.h"

namespace gpureap::cli {

struct TopOptions {
  std::string delay = "1s";
  bool readonly = false;
  bool no_mouse = false;
  bool no_daemon = false;
  std::string grace = "10s";
  std::string wait_release = "60s";
};

CLI::App* add_top_command(CLI::App& app, TopOptions& options);
int run_top(const GlobalOptions& global, const TopOptions& options);

}  // namespace gpureap::cli
