#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/global_options.h"

namespace gpureap::cli {

struct AuditOptions {
  std::optional<std::string> since;   // a duration ago (1h) or an RFC 3339 time
  std::optional<std::string> file;    // the audit log; else the config's audit_log
  std::optional<std::string> config;  // the daemon config naming audit_log
  std::optional<std::string> policy;
  std::optional<int> pid;
};

CLI::App* add_audit_command(CLI::App& app, AuditOptions& options);
// Exit: 0 shown (also when there is no log yet, or nothing matches); 2 usage error, or the
// log or the config cannot be read.
int run_audit(const GlobalOptions& global, const AuditOptions& options);

}  // namespace gpureap::cli
