#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/global_options.h"

namespace gpureap::cli {

struct PolicyOptions {
  std::string config;               // --config (default /etc/gpureap/config.toml)
  std::optional<std::string> name;  // --policy: only this one
};

// `gpureap policy test`: what each policy of a daemon config would match on this machine now.
CLI::App* add_policy_command(CLI::App& app, PolicyOptions& options);
// Exit: 0 shown; 2 the config is invalid or the machine cannot be read.
int run_policy(const GlobalOptions& global, const PolicyOptions& options);

}  // namespace gpureap::cli
