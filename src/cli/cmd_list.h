#pragma once
// `gpureap list KIND`: the values an argument can take on this machine, one per line, for the
// shell completions (completions/): GPU indices, doctor's finding codes, signal names. Hidden
// from --help; its output is "VALUE" or "VALUE<TAB>description", nothing else.
#include <CLI/CLI.hpp>
#include <string>

#include "cli/global_options.h"

namespace gpureap::cli {

struct ListOptions {
  std::string kind;  // gpus | finding-codes | signals
};

CLI::App* add_list_command(CLI::App& app, ListOptions& options);
// Exit: 0 listed (no GPU is an empty list); 2 the roots cannot be read.
int run_list(const GlobalOptions& global, const ListOptions& options);

}  // namespace gpureap::cli
