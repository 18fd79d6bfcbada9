#pragma once
#include <CLI/CLI.hpp>
#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/global_options.h"
#include "reap/plan.h"
#include "reap/world.h"

namespace gpureap::cli {

struct KillOptions {
  std::vector<pid_t> pids;
  std::optional<unsigned> gpu;
  std::optional<std::string> user;
  bool ghosts = false;
  bool stopped = false;
  bool tree = false;
  bool group = false;
  std::string signal = "TERM";
  std::string grace = "10s";
  bool no_escalate = false;
  std::string wait_release = "60s";
  bool dry_run = false;
  bool yes = false;
  bool no_daemon = false;  // decide without the daemon's sightings of the driver's lists
  // The command as the daemon's audit log and the report name it ("gpureap doctor --fix"),
  // announced before the first signal; empty: `gpureap kill` and its arguments.
  std::string announce_as;
  // --gpu as typed: "N", "N/G" (GPU N's GPU instance G) or an instance's UUID; `gpu` is
  // its index once resolved against the snapshot (core/gpu_place.h).
  std::optional<std::string> gpu_spec;
};

// "gpureap kill 4242 --gpu 0": the command line of these options, in short.
std::string kill_command_text(const KillOptions& options);

CLI::App* add_kill_command(CLI::App& app, KillOptions& options);
int run_kill(const GlobalOptions& global, const KillOptions& options);

struct KillRun {
  bool signalled = false;  // something was signalled (the plan was carried out)
  int exit_code = 0;
};

// Reaps `request` on `snapshot` — the view the decision was made on, so every target stays
// pinned to the process (PID and start time) that was chosen — through the reap pipeline:
// shows the plan, asks (a question on the terminal when stdin is one, else `proceed` says how
// to go on), signals and verifies, and shows the results. The human text goes to `out` (the
// JSON document, with global.json, to stdout). The options' own selection is ignored; their
// signal, grace and waits apply.
KillRun kill_on_snapshot(const GlobalOptions& global, const KillOptions& options,
                         const reap::Request& request, const reap::World& world,
                         const core::Snapshot& snapshot,
                         std::chrono::system_clock::time_point started, const std::string& proceed,
                         std::ostream& out);

}  // namespace gpureap::cli
