#pragma once
// What gpureap says when its command line cannot be parsed: CLI11's messages reworded in the
// voice of the rest of the tool ("unknown subcommand `doctr`; did you mean `doctor`?", "`abc`
// is not a PID"), each naming the help that answers it.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace gpureap::cli {

// The text to print after "gpureap: " (terminal-safe, possibly several lines), for an error of
// parsing `app` from `args` (the command line without the program's name).
std::string usage_error_text(const CLI::App& app, const CLI::ParseError& error,
                             const std::vector<std::string>& args);

}  // namespace gpureap::cli
