#include "cli/exit_status_table.h"

#include "cli/exit_codes.h"

namespace gpureap::cli {
namespace {

ExitStatus row(int code, std::string meaning, bool usage = false) {
  return {std::to_string(code), std::move(meaning), usage};
}

const char* const kUsageText =
    "a usage, permission or environment error (the message says what to do)";
const char* const kTimeoutText =
    "the GPU driver did not answer within --driver-timeout (what is shown comes from /proc "
    "alone)";

}  // namespace

std::vector<ExitStatus> exit_statuses(const std::string& command) {
  if (command == "kill")
    return {row(kExitOk, "every target is gone and its memory is back"),
            row(kExitFailed, "something survived or memory stayed held, or you answered no"),
            row(kExitUsage, kUsageText, true), row(kExitNoMatch, "nothing matched"),
            row(kExitDriverTimeout,
                "the GPU driver did not answer within --driver-timeout (with --gpu: no GPU N "
                "could be named, and nothing was signalled)")};
  if (command == "doctor")
    return {row(kDoctorHealthy, "nothing needs attention (findings at info at most)"),
            row(kDoctorWarnings, "warnings"), row(kDoctorCritical, "critical findings"),
            row(kDoctorCannotRun,
                "doctor could not run: a usage error (a bad option, a --gpu the driver lacks) "
                "or an environment error (the message says what to do)",
                true),
            row(kExitDriverTimeout, kTimeoutText)};
  if (command == "reset")
    return {row(kExitOk, "the GPU was reset (or, with --dry-run, could be)"),
            row(kExitFailed, "refused (something holds the GPU) or the reset failed"),
            row(kExitUsage, kUsageText, true), row(kExitDriverTimeout, kTimeoutText)};
  if (command == "run")
    return {
        {"N", "the command's own status (128+N when a signal N ended it)"},
        {"124", "--timeout ended the job"},
        row(kExitRunFailed, "gpureap failed before the command ran (a usage error included)", true),
        {"126", "the command is not executable"},
        {"127", "the command was not found"}};
  if (command == "daemon")
    return {row(kExitOk, "stopped by SIGTERM or SIGINT; with --check-config: the file is valid"),
            row(kExitFailed, "it could not serve (for example the address is in use)"),
            row(kExitUsage,
                "a configuration or usage error (systemd does not restart it); with "
                "--check-config: every problem and its line",
                true)};
  if (command == "cluster")
    return {row(kExitOk, "every node in view is healthy: nothing to show"),
            row(kExitFailed,
                "lines shown: a node or GPU has something to say, or a job is split across nodes"),
            row(kExitUsage,
                "a usage error (an unknown --node or --job included), or Prometheus cannot be "
                "asked or its answer read",
                true)};
  if (command == "ps")
    return {row(kExitOk, "success"),
            row(kExitUsage,
                "a usage, permission or environment error (the message says what to do), or a "
                "holder scan that failed: gpureap ran out of file descriptors or memory, so "
                "holders may be missing (the JSON says \"complete\": false, and why in "
                "scan_failures)",
                true),
            row(kExitDriverTimeout, kTimeoutText)};
  if (command == "top")
    return {row(kExitOk, "success"), row(kExitUsage, kUsageText, true),
            row(kExitDriverTimeout, kTimeoutText)};
  if (command == "audit")
    return {row(kExitOk, "the records were shown (no log yet is not an error)"),
            row(kExitUsage, "a usage error, or the log cannot be read", true)};
  if (command == "report")
    return {row(kExitOk, "the page was written"),
            row(kExitUsage,
                "it could not be: a usage error, no daemon at the address, a file that is not a "
                "history document, a page that cannot be written (the message says which)",
                true)};
  if (command == "policy")
    return {
        row(kExitOk, "the policies were tested"),
        row(kExitUsage, "a usage or configuration error (no config file, an invalid one)", true)};
  if (command.empty())
    return {row(kExitOk, "success"),
            row(kExitUsage, kUsageText, true),
            row(kExitDriverTimeout, kTimeoutText),
            {"",
             "Commands add statuses of their own, and a usage error of a command exits with that "
             "command's usage status: each command's --help and man page list them."}};
  return {row(kExitOk, "success"), row(kExitUsage, kUsageText, true)};
}

int usage_exit_code(const std::string& command) {
  for (const auto& s : exit_statuses(command))
    if (s.usage) return std::stoi(s.code);
  return kExitUsage;
}

}  // namespace gpureap::cli
