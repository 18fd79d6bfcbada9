#pragma once
#include <CLI/CLI.hpp>

#include "cli/global_options.h"

namespace gpureap::cli {

struct ResetOptions {
  unsigned gpu = 0;
  bool yes = false;
  bool dry_run = false;
};

CLI::App* add_reset_command(CLI::App& app, ResetOptions& options);
// Exit: 0 reset done and verified; 1 refused (holders) or the reset failed; 2 usage,
// permission or environment error.
int run_reset(const GlobalOptions& global, const ResetOptions& options);

}  // namespace gpureap::cli
