#pragma once
// `gpureap daemon`: the node agent. Wires the sampling engine, the HTTP endpoints, systemd's
// notifications and the signals (SIGHUP reloads, SIGTERM/SIGINT stop).
#include <optional>
#include <string>

#include "backend/settings.h"
#include "collect/collector.h"
#include "export/listen_address.h"

namespace gpureap::daemon {

struct DaemonOptions {
  std::optional<std::string> config_path;  // --config; empty: kDefaultConfigPath if it exists
  std::optional<exporter::ListenAddress> listen;  // --listen, wins over the config's `listen`
  collect::Roots roots;
  backend::BackendSettings backends;  // the roots and libraries the backends are made with
};

// Exit codes: 0 stopped by a signal; 1 it could not serve (e.g. the address is in use);
// 2 configuration or environment error (said on stderr).
int run_daemon(const DaemonOptions& options);

// `gpureap daemon --check-config FILE`: 0 and "FILE: ok" on stdout, or 2 and every problem.
int check_config(const std::string& path);

}  // namespace gpureap::daemon
