#pragma once
// Runs another program (e.g. a driver's reset tool) found on PATH and captures what it prints.
#include <string>
#include <vector>

#include "core/result.h"

namespace gpureap::cli {

struct CommandResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string output;  // stdout and stderr together
};

// Error when the program cannot be found or started.
core::Result<CommandResult> run_command(const std::vector<std::string>& argv);

// The full path of `name` on PATH, or empty.
std::string find_on_path(const std::string& name);

}  // namespace gpureap::cli
