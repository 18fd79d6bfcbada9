#pragma once
// Options every subcommand accepts, before or after its name.
#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>

#include "backend/watchdog.h"
#include "collect/collector.h"
#include "core/result.h"

namespace gpureap::cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;  // usage or environment error

struct GlobalOptions {
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  std::string nvml_library;  // empty: GPUREAP_NVML_LIBRARY, then the default search
  bool json = false;
  bool csv = false;
  bool no_color = false;
};

void add_global_options(CLI::App& app, GlobalOptions& options);

// The collector for these roots and the NVML backend; an unusable root is an error.
core::Result<collect::Collector> open_collector(const GlobalOptions& options);
// The NVML backend these options name (library, PID bound from the procfs).
std::shared_ptr<backend::GpuBackend> make_gpu_backend(const GlobalOptions& options);
// The same behind a watchdog, for views that sample the driver again and again (top,
// ps --watch): a wedged driver shows as "not answering" after 5 s and never freezes them.
std::shared_ptr<backend::WatchdogBackend> make_watched_gpu_backend(const GlobalOptions& options);

// Prints "gpureap: <message>" (and the hint) on stderr, returns kExitUsage.
int fail(const core::Error& error);

// Terminal columns of stdout, when it is a terminal.
std::optional<size_t> terminal_width();

}  // namespace gpureap::cli
