// `gpureap top`: the live view, with kills through the reaper.
#include "cli/cmd_top.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cli/announce.h"
#include "cli/daemon_client.h"
#include "core/duration.h"
#include "output/snapshot_wire.h"
#include "reap/arguments.h"
#include "reap/pipeline.h"
#include "tui/top.h"

namespace gpureap::cli {
namespace {

// The daemon's latest snapshot, rebuilt here from its inputs (output/snapshot_wire.h); empty on
// any failure, and where its PIDs name other processes than this command's (foreign_pids): top
// then samples on its own.
tui::SnapshotFetch daemon_fetch(const GlobalOptions& g, const TopOptions& o) {
  auto path = daemon_socket(g, o.no_daemon);
  if (!path) return {};
  return [path = *path]() -> std::optional<core::Snapshot> {
    auto answer = ask_daemon(path, daemon::SnapshotRequest{});
    if (!answer) return std::nullopt;
    auto snapshot = output::snapshot_from_wire_text(answer->output);
    if (!snapshot || foreign_pids(snapshot->proc)) return std::nullopt;
    return std::move(*snapshot);
  };
}

}  // namespace

CLI::App* add_top_command(CLI::App& app, TopOptions& o) {
  auto* top =
      app.add_subcommand("top", "live view of GPU memory and its holders; kill through the reaper");
  top->add_option("-d,--delay", o.delay, "refresh interval (500ms, 1s, 2s)")->capture_default_str();
  top->add_flag("--readonly", o.readonly, "disable every action (k does nothing)");
  top->add_flag("--no-mouse", o.no_mouse, "leave the mouse to the terminal (text selection)");
  top->add_flag("--no-daemon", o.no_daemon,
                "sample /proc and the drivers here even when the gpureap daemon could answer");
  top->add_option("--grace", o.grace, "for kills: wait this long after SIGTERM before SIGKILL")
      ->capture_default_str();
  top->add_option("--wait-release", o.wait_release,
                  "for kills: wait this long for the memory to come back")
      ->capture_default_str();
  top->footer(
      "Keys: ? shows them all. q or Ctrl-C quits. Colour follows the terminal; --no-color or "
      "NO_COLOR=1 turn it off.");
  return top;
}

int run_top(const GlobalOptions& g, const TopOptions& o) {
  if (g.json || g.csv)
    return fail({"gpureap top is interactive and has no JSON or CSV output",
                 "use `gpureap ps --watch --json` for one snapshot per line"});
  tui::TopConfig config;
  auto delay = core::parse_duration(o.delay);
  if (!delay) return fail({"--delay: " + delay.error().message, delay.error().hint});
  if (*delay < std::chrono::milliseconds(100))
    return fail({"--delay " + o.delay + " is too short", "use 100ms or more"});
  config.interval = *delay;
  auto grace = core::parse_duration(o.grace);
  if (!grace) return fail({"--grace: " + grace.error().message, grace.error().hint});
  auto wait = core::parse_duration(o.wait_release);
  if (!wait) return fail({"--wait-release: " + wait.error().message, wait.error().hint});
  config.kill.exec.grace = *grace;
  config.kill.exec.kill_wait = reap::kill_wait_for(*grace);
  config.kill.verify.wait_release = *wait;
  config.announce = [](const reap::Plan& plan, int signal) {
    announce_plan("gpureap top", signal, plan);
  };
  config.readonly = o.readonly;
  config.mouse = !o.no_mouse;
  config.from_daemon = daemon_fetch(g, o);
  const char* no_color = std::getenv("NO_COLOR");
  config.color = !g.no_color && !(no_color && *no_color);
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  auto backend = collector->drivers();
  if (!collector->procfs().names_own_processes())
    config.actions_unavailable =
        "actions are off: " + g.proc_root +
        " is not the procfs of gpureap's own PID namespace, so its PIDs cannot be signalled";
  auto shared = std::make_shared<const collect::Collector>(std::move(*collector));
  auto result = tui::run_top(shared, backend, config);
  if (result.error) fail(*result.error);
  if (result.threads_left_behind) {
    // A thread is blocked in the driver: exit() would run destructors under it. Leave now.
    std::fflush(nullptr);
    ::_exit(result.exit_code);
  }
  return result.exit_code;
}

}  // namespace gpureap::cli
