#pragma once
// Options every subcommand accepts, before or after its name.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "backend/watchdog.h"
#include "cli/exit_codes.h"
#include "collect/collector.h"
#include "core/result.h"

namespace gpureap::cli {

struct GlobalOptions {
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  std::string nvml_library;  // empty: GPUREAP_NVML_LIBRARY, then the default search
  bool json = false;
  bool csv = false;
  bool no_color = false;
  std::string driver_timeout = "5s";  // how long one read of the driver may take
};

void add_global_options(CLI::App& app, GlobalOptions& options);

// The collector for these roots and the NVML backend, behind a watchdog: a driver that does not
// answer within --driver-timeout is reported down ("not-answering") instead of hanging the
// command. An unusable root or a malformed timeout is an error.
core::Result<collect::Collector> open_collector(const GlobalOptions& options);
// The driver did not answer for this snapshot: says so on stderr (what it shows is /proc
// alone) and returns true; the command then exits with kExitDriverTimeout.
bool report_driver_timeout(const core::Snapshot& snapshot);
// The NVML backend these options name (library, PID bound from the procfs).
std::shared_ptr<backend::GpuBackend> make_gpu_backend(const GlobalOptions& options);
// The same behind a watchdog with the --driver-timeout (views that sample the driver again and
// again, top and ps --watch, use it directly): a wedged driver shows as "not answering" and
// never freezes them. Empty when the timeout is malformed (open_collector says why).
std::shared_ptr<backend::WatchdogBackend> make_watched_gpu_backend(const GlobalOptions& options);

// Prints "gpureap: <message>" (and the hint) on stderr, returns kExitUsage.
int fail(const core::Error& error);

// Terminal columns of stdout, when it is a terminal.
std::optional<size_t> terminal_width();

}  // namespace gpureap::cli
