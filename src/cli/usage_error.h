#pragma once
// What gpureap says when its command line cannot be parsed: CLI11's messages reworded in the
// voice of the rest of the tool ("unknown subcommand `frobnicate`; run `gpureap --help` for
// the list", "`abc` is not a PID"), each naming the help that answers it.
#include <CLI/CLI.hpp>
#include <string>

namespace gpureap::cli {

// The line to print after "gpureap: " (terminal-safe), for an error of parsing `app`.
std::string usage_error_text(const CLI::App& app, const CLI::ParseError& error);

}  // namespace gpureap::cli
