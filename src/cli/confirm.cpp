#include "cli/confirm.h"

#include <unistd.h>

#include <iostream>

namespace gpureap::cli {

core::Result<bool> confirm(const std::string& question, bool yes) {
  if (yes) return true;
  if (!::isatty(STDIN_FILENO))
    return core::Error{"not a terminal, so gpureap cannot ask for confirmation",
                       "pass --yes to proceed, or --dry-run to only see the plan"};
  // The answer comes from the terminal; the question goes where the person reads it, also
  // when stdout is a pipe.
  std::ostream& out = ::isatty(STDOUT_FILENO) ? std::cout : std::cerr;
  out << question << " [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes";
}

}  // namespace gpureap::cli
