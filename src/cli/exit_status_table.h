#pragma once
// The one table of every command's exit statuses: the end of its --help is printed from it,
// and its man page's EXIT STATUS section is checked against that help
// (tests/package/docs_test.sh). A command line that cannot be parsed exits with the command's
// usage status, which no verdict of the command shares.
#include <string>
#include <vector>

namespace gpureap::cli {

struct ExitStatus {
  std::string code;  // "0"; "N" for a status passed on (run); empty: a note under the table
  std::string meaning;
  bool usage = false;  // the status of a usage error
};

// The statuses of `command` ("kill", "policy", "" for gpureap itself), in order.
std::vector<ExitStatus> exit_statuses(const std::string& command);

// The status of a usage error of `command` (a bad option, a missing value).
int usage_exit_code(const std::string& command);

}  // namespace gpureap::cli
