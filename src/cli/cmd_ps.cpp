#include "cli/cmd_ps.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/daemon_client.h"
#include "core/duration.h"
#include "output/kernel_note.h"
#include "output/ps_render.h"
#include "output/style.h"
#include "tui/ps_watch.h"

namespace gpureap::cli {
namespace {

static_assert(output::kPsExitDriverTimeout == kExitDriverTimeout);

// The daemon answers only a plain `ps` (not --watch) when it may (cli/daemon_client.h).
std::optional<daemon::Answer> from_daemon(const GlobalOptions& g, const PsOptions& o,
                                          const output::PsRenderOptions& render) {
  auto path = daemon_socket(g, o.no_daemon);
  if (!path) return std::nullopt;
  return ask_daemon(*path,
                    daemon::PsRequest{render.format, render.tree, render.width, render.color});
}

// The options checked and the collector opened here; the loop is tui's.
int run_ps_watch(const GlobalOptions& g, const PsOptions& o) {
  if (g.csv)
    return fail({"--watch cannot print CSV",
                 "use --watch alone for the table, or --watch --json for JSON lines"});
  tui::PsWatchOptions watch{.every = o.watch->empty() ? "2s" : *o.watch,
                            .tree = o.tree,
                            .json = g.json,
                            .no_color = g.no_color};
  auto interval = core::parse_duration(watch.every);
  if (!interval) return fail({"--watch: " + interval.error().message, interval.error().hint});
  if (*interval < std::chrono::milliseconds(100))
    return fail({"--watch " + watch.every + " is too short", "use 100ms or more"});
  watch.interval = *interval;
  // A wedged driver must not freeze the screen: the driver gets a deadline, /proc stays live.
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  auto backend = collector->drivers();
  bool joined = tui::watch_ps(*collector, watch);
  // A collection blocked in the driver keeps a thread: leave without waiting for it.
  if (!joined || backend->threads_stuck()) {
    std::fflush(nullptr);
    ::_exit(kExitOk);
  }
  return kExitOk;
}

}  // namespace

CLI::App* add_ps_command(CLI::App& app, PsOptions& o) {
  auto* ps = app.add_subcommand(
      "ps", "show every process that holds GPU memory or GPU device files (default)");
  ps->add_flag("--tree", o.tree, "show the holders inside their process tree");
  ps->add_option(
        "--watch", o.watch,
        "re-render in place every INTERVAL (default 2s); with --json one snapshot per line")
      ->expected(0, 1)
      ->type_name("[INTERVAL]");
  ps->add_flag("--no-daemon", o.no_daemon,
               "scan /proc and the drivers here even when the gpureap daemon could answer");
  return ps;
}

int run_ps(const GlobalOptions& g, const PsOptions& o) {
  if (g.json && g.csv)
    return fail({"--json and --csv cannot be combined", "choose one output format"});
  if (o.watch) return run_ps_watch(g, o);
  output::PsRenderOptions render{.format = g.json  ? output::PsFormat::Json
                                           : g.csv ? output::PsFormat::Csv
                                                   : output::PsFormat::Table,
                                 .tree = o.tree,
                                 .width = terminal_width(),
                                 .color = output::Style::for_stdout(g.no_color).enabled()};
  if (auto answer = from_daemon(g, o, render))
    return print_command_output(answer->output, answer->warnings, answer->exit_code);
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  auto snapshot = collector->collect();
  auto rendered = output::render_ps_command(snapshot, render);
  // A GPU that logged a critical error looks healthy in the table: one line on stderr says so.
  if (auto note = output::kernel_note(collector->kernel_log(snapshot)))
    rendered.err.push_back(*note);
  return print_command_output(rendered.out, rendered.err, rendered.exit_code);
}

}  // namespace gpureap::cli
