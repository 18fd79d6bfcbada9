#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/global_options.h"

namespace gpureap::cli {

struct PsOptions {
  bool tree = false;
  std::optional<std::string> watch;  // --watch [INTERVAL]; "" when given without one
  bool no_daemon = false;            // scan even when a daemon could answer
};

CLI::App* add_ps_command(CLI::App& app, PsOptions& options);
int run_ps(const GlobalOptions& global, const PsOptions& options);

}  // namespace gpureap::cli
