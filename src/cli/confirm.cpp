#include "cli/confirm.h"

#include <unistd.h>

#include <iostream>

#include "output/prompt.h"

namespace gpureap::cli {

core::Result<bool> confirm(const std::string& question, bool yes) {
  if (yes) return true;
  if (!::isatty(STDIN_FILENO))
    return core::Error{"not a terminal, so gpureap cannot ask for confirmation",
                       "pass --yes to proceed, or --dry-run to only see the plan"};
  // The answer comes from the terminal; the question goes where the person reads it, also
  // when stdout is a pipe.
  return ask(question, ::isatty(STDOUT_FILENO) ? std::cout : std::cerr);
}

bool ask(const std::string& question, std::ostream& out) {
  return output::ask_yes_no(question, std::cin, out);
}

}  // namespace gpureap::cli
