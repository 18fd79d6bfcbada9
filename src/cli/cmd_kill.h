#pragma once
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cli/global_options.h"

namespace gpureap::cli {

struct KillOptions {
  std::vector<pid_t> pids;
  std::optional<unsigned> gpu;
  std::optional<std::string> user;
  bool ghosts = false;
  bool tree = false;
  bool group = false;
  std::string signal = "TERM";
  std::string grace = "10s";
  bool no_escalate = false;
  std::string wait_release = "60s";
  bool dry_run = false;
  bool yes = false;
};

CLI::App* add_kill_command(CLI::App& app, KillOptions& options);
int run_kill(const GlobalOptions& global, const KillOptions& options);

}  // namespace gpureap::cli
