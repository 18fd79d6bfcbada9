// `gpureap audit`: what the daemon's cleanup policies decided and did, read back from the
// audit log (rotated files included).
#include "cli/cmd_audit.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "audit/reader.h"
#include "daemon/config.h"
#include "export/history_since.h"
#include "output/audit_view.h"
#include "output/snapshot_json.h"
#include "output/table.h"
#include "text/byte_format.h"
#include "text/escape.h"

namespace gpureap::cli {
namespace {

using TimePoint = std::chrono::system_clock::time_point;

// The daemon's audit_log. Only the file is parsed: the token file it may name is none of
// this command's business (and usually readable by root alone).
core::Result<std::string> audit_log_path(const AuditOptions& o) {
  if (o.file) return *o.file;
  const std::string config = o.config.value_or(daemon::kDefaultConfigPath);
  if (!o.config && ::access(config.c_str(), F_OK) != 0 && errno == ENOENT)
    return daemon::DaemonConfig{}.audit_log;
  std::ifstream in(config);
  if (!in)
    return core::Error{"cannot read config file " + config + ": " + std::strerror(errno),
                       "pass --file PATH to read an audit log directly"};
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = daemon::parse_config(text.str(), config);
  if (!parsed)
    return core::Error{parsed.error().message,
                       "fix it (gpureap daemon --check-config " + config +
                           "), or pass --file PATH to read an audit log directly"};
  return parsed->audit_log;
}

core::Result<TimePoint> parse_since(const std::string& text) {
  auto since = exporter::parse_since(text, std::chrono::system_clock::now());
  if (!since)
    return core::Error{"--since " + text::terminal_safe(text) + " is neither a duration nor a time",
                       since.error().hint};
  return *since;
}

void filter(std::vector<audit::Record>& records, const AuditOptions& o) {
  std::erase_if(records, [&](const audit::Record& r) {
    return (o.policy && r.policy != *o.policy) || (o.pid && r.process.pid != *o.pid);
  });
}

void warn_malformed(const audit::AuditLogContents& contents) {
  if (contents.malformed_lines == 0) return;
  const auto& first = *contents.first_malformed;
  std::cerr << "gpureap: warning: skipped " << contents.malformed_lines << " malformed line"
            << (contents.malformed_lines == 1 ? "" : "s")
            << " (the first: " << text::terminal_safe(first.file) << " line " << first.line << ": "
            << text::terminal_safe(first.reason) << ")\n"
            << "  a line cut short by a full disk or a crash is expected; others mean the file was "
               "edited or written by another program\n";
}

std::string summary(const std::vector<audit::Record>& records, const audit::AuditLogContents& c) {
  uint64_t released = 0;
  for (const auto& r : records) released += r.released_bytes.value_or(0);
  std::string out = std::to_string(records.size()) + (records.size() == 1 ? " record" : " records");
  if (released > 0) out += ", " + text::human_bytes(released) + " released";
  out += " (" + text::terminal_safe(c.files.back());
  if (c.files.size() > 1)
    out += " and " + std::to_string(c.files.size() - 1) + " rotated file" +
           (c.files.size() == 2 ? "" : "s");
  return out + "). `gpureap audit --json` shows every field: reasons, memory per GPU, details.\n";
}

}  // namespace

CLI::App* add_audit_command(CLI::App& app, AuditOptions& o) {
  auto* cmd = app.add_subcommand(
      "audit", "show what cleanup policies decided and did (the daemon's audit log)");
  cmd->add_option("--since", o.since,
                  "only records newer than this: a duration ago (1h, 2d) or an RFC 3339 time");
  auto* file =
      cmd->add_option("--file", o.file, "the audit log to read (default: audit_log of the config)");
  cmd->add_option("--config", o.config,
                  "the daemon config whose audit_log to read (default /etc/gpureap/config.toml)")
      ->excludes(file);
  cmd->add_option("--policy", o.policy, "only records of this policy");
  cmd->add_option("--pid", o.pid, "only records about this PID");
  return cmd;
}

int run_audit(const GlobalOptions& g, const AuditOptions& o) {
  if (g.csv) return fail({"gpureap audit has no CSV output", "use --json"});
  std::optional<TimePoint> since;
  if (o.since) {
    auto parsed = parse_since(*o.since);
    if (!parsed) return fail(parsed.error());
    since = *parsed;
  }
  auto path = audit_log_path(o);
  if (!path) return fail(path.error());
  auto contents = audit::read_audit_log(*path, since);
  if (!contents) return fail(contents.error());

  if (contents->files.empty()) {
    std::cerr << "gpureap: no audit log at " << text::terminal_safe(*path)
              << " yet: the daemon writes it when a cleanup policy acts\n";
    if (g.json) std::cout << output::dump_json(output::audit_to_json({}, 0)) << "\n";
    return kExitOk;
  }
  filter(contents->records, o);
  warn_malformed(*contents);
  if (g.json) {
    std::cout << output::dump_json(
                     output::audit_to_json(contents->records, contents->malformed_lines))
              << "\n";
    return kExitOk;
  }
  if (contents->records.empty()) {
    std::cout << "No audit records" << (o.since ? " since " + text::terminal_safe(*o.since) : "")
              << (o.policy || o.pid ? " match --policy/--pid" : "") << " in "
              << text::terminal_safe(*path) << ".\n";
    return kExitOk;
  }
  auto style = output::Style::for_stdout(g.no_color);
  std::cout << output::render_audit_table(
                   contents->records, style,
                   output::fit_width(terminal_width(), std::getenv("COLUMNS")))
            << "\n"
            << summary(contents->records, *contents);
  return kExitOk;
}

}  // namespace gpureap::cli
