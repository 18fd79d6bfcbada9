#pragma once
// The daemon's configuration: a TOML file (default /etc/gpureap/config.toml), every key
// documented with its default in docs/config.md. Unknown keys, wrong types and values out of
// range are errors with the file, line and column, so a typo never silently means "default".
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alert/rule.h"
#include "alert/sink.h"
#include "base/log.h"
#include "core/result.h"
#include "doctor/stalled_job.h"
#include "doctor/unattributed_threshold.h"
#include "export/listen_address.h"
#include "policy/policy.h"

namespace gpureap::daemon {

inline constexpr const char* kDefaultConfigPath = "/etc/gpureap/config.toml";

struct DaemonConfig {
  exporter::ListenAddress listen{"127.0.0.1", 9842};
  // The Unix socket `gpureap ps` asks the daemon through; "" serves none, unset is
  // daemon::default_local_socket() (/run/gpureap/gpureap.sock, or $GPUREAP_DAEMON_SOCKET).
  std::optional<std::string> local_socket;
  // Where the sightings a restart takes on are kept (daemon/sightings_file.h); "" keeps none,
  // unset is sightings.json beside the local socket (none without one).
  std::optional<std::string> sightings_file;
  std::chrono::milliseconds interval{std::chrono::seconds(1)};
  std::chrono::milliseconds holder_scan_interval{std::chrono::seconds(10)};
  std::chrono::milliseconds full_scan_interval{std::chrono::minutes(1)};
  // Follow opens and final closes of GPU files and holders' forks through the kernel's events
  // (fanotify, the proc connector) where it allows; scans are then a safety net, every
  // event_full_scan_interval. false, or where the kernel refuses: the intervals above.
  bool holder_events = true;
  std::chrono::milliseconds event_full_scan_interval{std::chrono::minutes(10)};
  std::chrono::milliseconds history{std::chrono::hours(1)};
  size_t history_max_processes = 1024;
  bool per_process_metrics = false;
  std::optional<std::string> auth_token_file;
  std::chrono::milliseconds driver_timeout{std::chrono::seconds(5)};
  base::LogLevel log_level = base::LogLevel::Info;
  // Driver-used memory no listed process accounts for, above which doctor's findings (and
  // /metrics) report unattributed-memory.
  doctor::UnattributedThreshold unattributed_threshold;
  // How long after the daemon saw a rank of a distributed job end its stalled-job finding turns
  // critical (the others have waited that long).
  std::chrono::milliseconds stalled_job_critical_after = doctor::kStalledJobCriticalAfter;

  // Cleanup policies act only when enforce is true; until then they log "would terminate".
  bool enforce = false;
  std::vector<policy::Policy> policies;
  std::string audit_log = "/var/log/gpureap/audit.jsonl";
  uint64_t audit_max_bytes = 64ull << 20;  // rotate when the file reaches this size
  unsigned audit_keep = 5;                 // rotated files kept: audit.jsonl.1 ... .N
  std::vector<alert::Rule> alerts;
  std::vector<alert::SinkConfig> sinks;

  // Filled by load_config: where it came from, and the token read from auth_token_file.
  std::string source = "built-in defaults";
  std::optional<std::string> auth_token;
};

// Parses TOML text; `source` names it in messages ("config.toml:3:1: ..."). Every problem is
// reported, one per line of the error's message. Does not read the token file.
core::Result<DaemonConfig> parse_config(std::string_view text, const std::string& source);

// Reads and parses a file, then reads the token file it names.
core::Result<DaemonConfig> load_config(const std::string& path);

// The token in a token file: its content without surrounding whitespace; an empty or
// unreadable file is an error.
core::Result<std::string> read_token_file(const std::string& path);

}  // namespace gpureap::daemon
