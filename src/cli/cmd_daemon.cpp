// `gpureap daemon`: the node agent (src/daemon), and `--check-config` for its config file.
#include "cli/cmd_daemon.h"

#include <cstdlib>

#include "daemon/config.h"
#include "daemon/daemon.h"

namespace gpureap::cli {

CLI::App* add_daemon_command(CLI::App& app, DaemonCliOptions& o) {
  auto* cmd = app.add_subcommand(
      "daemon",
      "node agent: Prometheus metrics, findings and history over HTTP (systemd, Kubernetes)");
  cmd->add_option("--config", o.config,
                  std::string("TOML config file (default ") + daemon::kDefaultConfigPath +
                      " if it exists, else built-in defaults; keys in docs/config.md)");
  cmd->add_option("--listen", o.listen,
                  "HOST:PORT to serve on, over the config's `listen` (default 127.0.0.1:9842)");
  cmd->add_option("--check-config", o.check_config,
                  "check FILE and exit: 0 valid, 2 with every problem and its line");
  cmd->footer(
      "Endpoints: /metrics /healthz /api/v1/snapshot /api/v1/findings "
      "/api/v1/history?gpu=N&since=10m\n"
      "SIGHUP reloads the config (an invalid one is refused and the old one kept); SIGTERM stops.");
  return cmd;
}

int run_daemon_command(const GlobalOptions& g, const DaemonCliOptions& o) {
  if (o.check_config) return daemon::check_config(*o.check_config);
  daemon::DaemonOptions options;
  options.config_path = o.config;
  if (o.listen) {
    auto listen = exporter::parse_listen_address(*o.listen);
    if (!listen) return fail(listen.error());
    options.listen = *listen;
  }
  options.roots = collector_roots(g);
  options.backends = backend_settings(g);
  return daemon::run_daemon(options);
}

}  // namespace gpureap::cli
