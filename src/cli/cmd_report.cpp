// `gpureap report`: the daemon's history (or a saved copy) and the policies' audit log drawn
// as one self-contained HTML page.
#include "cli/cmd_report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "audit/reader.h"
#include "cli/daemon_client.h"
#include "cli/page_file.h"
#include "daemon/config.h"
#include "daemon/local_protocol.h"
#include "export/history_since.h"
#include "report/daemon_fetch.h"
#include "report/history_page.h"
#include "report/html_page.h"
#include "text/byte_format.h"
#include "text/escape.h"

namespace gpureap::cli {
namespace {

core::Result<std::string> read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return core::Error{
        "cannot read " + what + " " + text::terminal_safe(path) + ": " + std::strerror(errno),
        "check the path and its permissions"};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The daemon's configuration, for its listen address, audit log and token: the default one
// when no config file exists and none was named.
core::Result<daemon::DaemonConfig> daemon_config(const ReportOptions& o) {
  const std::string path = o.config.value_or(daemon::kDefaultConfigPath);
  if (!o.config && ::access(path.c_str(), F_OK) != 0 && errno == ENOENT)
    return daemon::DaemonConfig{};
  auto text = read_file(path, "config file");
  if (!text)
    return core::Error{text.error().message,
                       "pass --daemon HOST:PORT and --audit-log FILE instead of the config"};
  auto parsed = daemon::parse_config(*text, path);
  if (!parsed)
    return core::Error{parsed.error().message,
                       "fix it (gpureap daemon --check-config " + path +
                           "), or pass --daemon HOST:PORT and --audit-log FILE"};
  return *parsed;
}

// The history from the daemon's local socket, whose server ask_daemon verifies (root or this
// user): no token, no TCP port anyone could have taken. Empty when it cannot answer (no socket,
// not allowed, an older daemon): then the HTTP API.
std::optional<std::string> history_from_socket(const ReportOptions& o,
                                               const daemon::DaemonConfig& config) {
  const std::string socket = config.local_socket.value_or(daemon::default_local_socket());
  if (socket.empty()) return std::nullopt;
  auto answer =
      ask_daemon(socket, daemon::HistoryRequest{o.since, o.until}, std::chrono::seconds(15));
  if (!answer || answer->exit_code != 0) return std::nullopt;
  return std::move(answer->output);
}

core::Result<std::string> history_text(const ReportOptions& o, const daemon::DaemonConfig& config) {
  if (o.from) return read_file(*o.from, "the history file");
  // The config's daemon is this machine's: its local socket first.
  if (!o.daemon)
    if (auto text = history_from_socket(o, config)) return *text;
  report::FetchRequest request;
  request.since = o.since;
  request.until = o.until;
  request.daemon = config.listen;
  if (o.daemon) {
    auto a = exporter::parse_listen_address(*o.daemon);
    if (!a) return core::Error{"--daemon: " + a.error().message, a.error().hint};
    request.daemon = *a;
  }
  // The token file is usually root's alone: without it, the daemon's 401 says what to do. The
  // daemon runs as root or as the file's owner: on this machine the token goes only to a port
  // one of them holds.
  if (config.auth_token_file)
    if (auto token = daemon::read_token_file(*config.auth_token_file)) {
      request.token = *token;
      struct stat st {};
      if (::stat(config.auth_token_file->c_str(), &st) == 0 && st.st_uid != 0)
        request.token_holders.push_back(st.st_uid);
    }
  return report::fetch_history(request);
}

// The audit log's records over the span, or a note on the page saying why there are none.
void add_audit(report::HistoryInput& input, const std::string& path,
               std::vector<std::string>& notes) {
  auto contents = audit::read_audit_log(path, input.since);
  if (!contents) {
    std::cerr << "gpureap: warning: " << text::terminal_safe(contents.error().message) << "\n";
    notes.push_back("The audit log could not be read (" + contents.error().message +
                    "): policy actions are not marked.");
    return;
  }
  if (contents->files.empty()) {
    notes.push_back("No audit log at " + path + ": no policy actions to mark.");
    return;
  }
  input.audit = std::move(contents->records);
}

}  // namespace

CLI::App* add_report_command(CLI::App& app, ReportOptions& o) {
  auto* cmd = app.add_subcommand(
      "report",
      "draw GPU memory over time, with the ghosts in it, as one HTML page (from the daemon's "
      "history, or a saved copy of it)");
  cmd->add_option("--since", o.since,
                  "how far back: a duration (6h, 30m), a Unix time or an RFC 3339 time")
      ->default_str("6h");
  cmd->add_option("--until", o.until,
                  "where the window ends: a duration ago (1h), a Unix time or an RFC 3339 time "
                  "(default: now)");
  cmd->add_option("-o,--out", o.out, "the page to write (- for stdout)")
      ->default_str("report.html");
  cmd->add_option("--from", o.from,
                  "draw a saved /api/v1/history document instead of asking the daemon");
  cmd->add_option("--daemon", o.daemon, "the daemon's HTTP address (default: the config's listen)");
  cmd->add_option("--config", o.config, "the daemon's config (listen, audit_log, auth_token_file)");
  cmd->add_option("--audit-log", o.audit_log,
                  "the policies' audit log, for their actions (default: the config's audit_log)");
  cmd->add_option("--processes", o.named, "processes named per GPU; the rest are \"other\"")
      ->default_str("5")
      ->check(CLI::Range(1, 12));
  add_cluster_report_options(*cmd, o.cluster);
  cmd->footer(
      "The page has no script and fetches nothing: open it in any browser, offline, or "
      "print it. A box at the top says each GPU's state now and what fixes each problem; under "
      "each chart, a lane per process that held the GPU (hover for who signalled it, and "
      "when). Ghost memory is hatched; markers are numbered and listed under each chart.");
  cmd->callback([cmd, &o] { o.since_given = cmd->count("--since") > 0; });
  return cmd;
}

int run_report(const GlobalOptions& g, const ReportOptions& o) {
  if (g.json || g.csv)
    return fail({"--json and --csv do not apply to `report`: it writes an HTML page",
                 "for the numbers, ask the daemon's /api/v1/history"});
  if (o.cluster.prometheus) return run_cluster_report(g, o.cluster, o.since, o.out);
  const auto now = std::chrono::system_clock::now();
  auto since = exporter::parse_since(o.since, now);
  if (!since)
    return fail({"--since " + text::terminal_safe(o.since) + " is neither a duration nor a time",
                 since.error().hint});
  std::optional<std::chrono::system_clock::time_point> until;
  if (o.until) {
    auto u = exporter::parse_since(*o.until, now);
    if (!u)
      return fail({"--until " + text::terminal_safe(*o.until) + " is neither a duration nor a time",
                   u.error().hint});
    if (*u <= *since)
      return fail({"--until is not after --since: the window would be empty",
                   "give --until a later time than --since"});
    until = *u;
  }
  auto config = daemon_config(o);
  if (!config) return fail(config.error());
  auto body = history_text(o, *config);
  if (!body) return fail(body.error());
  auto input = report::parse_history_document(*body);
  if (!input) return fail(input.error());
  if (o.from && o.since_given && *since > input->since) input->since = *since;
  if (until) input->until = *until;

  std::vector<std::string> notes;
  add_audit(*input, o.audit_log.value_or(config->audit_log), notes);
  report::HistoryPageOptions options;
  options.named_processes = o.named;
  options.generated = now;
  auto page = report::build_history_page(*input, options);
  page.notes.insert(page.notes.end(), notes.begin(), notes.end());
  auto written = write_page(o.out, report::render_html(page));
  if (!written) return fail(written.error());
  if (o.out != "-")
    std::cerr << "gpureap: wrote " << text::terminal_safe(o.out) << " (" << page.gpus.size()
              << (page.gpus.size() == 1 ? " GPU, " : " GPUs, ") << page.ghosts.size()
              << (page.ghosts.size() == 1 ? " ghost, " : " ghosts, ") << text::human_bytes(*written)
              << "): open it in a browser\n";
  return 0;
}

}  // namespace gpureap::cli
