#pragma once
// Asking before a destructive action: when stdin is a terminal, a y/N question (on stderr if
// stdout is a pipe); without one, the user must have said --yes up front (a script must never
// hang on a prompt). Which answers go ahead is output/prompt.h's one rule.
#include <ostream>
#include <string>

#include "core/result.h"

namespace gpureap::cli {

// true: go ahead; false: the user said no. Error: no terminal and no --yes.
core::Result<bool> confirm(const std::string& question, bool yes_flag);

// The question on `out`, the answer from stdin (a terminal: the caller checked).
bool ask(const std::string& question, std::ostream& out);

}  // namespace gpureap::cli
