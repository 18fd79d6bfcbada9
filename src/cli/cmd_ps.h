#pragma once
#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/global_options.h"

namespace gpureap::cli {

struct PsOptions {
  bool tree = false;
  std::optional<std::string> watch;  // --watch [INTERVAL]; "" when given without one
  bool no_daemon = false;            // scan even when a daemon could answer
  std::vector<std::string> gpus;     // --gpu N, N/G or a UUID (repeatable)
  std::vector<std::string> users;    // --user U
  std::vector<pid_t> pids;           // --pid P
  std::string sort = "pid";          // --sort memory|pid|age|user
  bool compact = false;              // --compact: one line per GPU
  bool verbose = false;              // -v: every note, also those repeated on every run
};

CLI::App* add_ps_command(CLI::App& app, PsOptions& options);
int run_ps(const GlobalOptions& global, const PsOptions& options);

}  // namespace gpureap::cli
