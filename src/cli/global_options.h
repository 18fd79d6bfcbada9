#pragma once
// Options every subcommand accepts, before or after its name.
#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "backend/backend_set.h"
#include "cli/exit_codes.h"
#include "collect/collector.h"
#include "core/gpu_index.h"
#include "core/result.h"

namespace gpureap::cli {

struct GlobalOptions {
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  std::string sys_root = "/sys";
  std::string kmsg = "/dev/kmsg";  // the kernel log, or a saved copy (`cat /dev/kmsg > FILE`)
  // The driver libraries named with the registry's options (--<LibraryOption::option>), by
  // backend name; one not given: its environment variable, then the default search.
  std::map<std::string, std::string> libraries;
  std::string runtime_root;  // empty: the folder that holds the proc root

  bool json = false;
  bool csv = false;
  bool no_color = false;
  std::string driver_timeout = "5s";  // how long one read of the driver may take
  // One of --proc-root, --dev-root, --sys-root, --kmsg, --runtime-root or a library was given
  // (even with its default value): the user asks about those, so `ps` scans them instead of asking
  // the daemon.
  bool roots_given = false;
  // --proc-root was given: its PIDs may be another namespace's or a saved tree's, not the
  // daemon's.
  bool proc_root_given = false;
};

void add_global_options(CLI::App& app, GlobalOptions& options);
collect::Roots collector_roots(const GlobalOptions& options);
// After parsing: what add_global_options cannot tell from the values alone (roots_given,
// proc_root_given).
void note_given_options(const CLI::App& app, GlobalOptions& options);

// The collector for these roots and every registered backend, each driver behind a watchdog: a
// driver that does not answer within --driver-timeout is reported down ("not-answering")
// instead of hanging the command (the views read the drivers' state through drivers(): how
// long one has not answered, whether a call is stuck). An unusable root or a malformed timeout
// is an error.
core::Result<collect::Collector> open_collector(const GlobalOptions& options);
// The driver did not answer for this snapshot: says so on stderr (what it shows is /proc
// alone) and returns true; the command then exits with kExitDriverTimeout.
bool report_driver_timeout(const core::Snapshot& snapshot);
// What the registry's backends need from these options: roots, the libraries a user named,
// the PID bound from the procfs.
backend::BackendSettings backend_settings(const GlobalOptions& options);

// Prints "gpureap: <message>" (and the hint) on stderr, returns kExitUsage.
int fail(const core::Error& error);
// A --gpu or --user that names nothing here (core::resolve_gpu, output::check_selection):
// the message, then `usage` (the command's status for a bad option), or 4 when no driver
// answered that could have named the GPU.
int fail_scope(const core::ScopeError& problem, int usage = kExitUsage);

// Terminal columns of stdout, when it is a terminal.
std::optional<size_t> terminal_width();

}  // namespace gpureap::cli
