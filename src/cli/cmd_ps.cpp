#include "cli/cmd_ps.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "base/phase_timer.h"
#include "cli/daemon_client.h"
#include "core/duration.h"
#include "output/kernel_note.h"
#include "output/ps_render.h"
#include "output/style.h"
#include "output/table.h"
#include "tui/ps_watch.h"

namespace gpureap::cli {
namespace {

static_assert(output::kPsExitDriverTimeout == kExitDriverTimeout &&
              output::kPsExitUsage == kExitUsage);

// What `ps` prints for a snapshot and the kernel log read with it: the same on the command's
// own scan and on the daemon's evidence.
output::PsRendered ps_output(const core::Snapshot& snapshot, const core::KernelLog* kernel_log,
                             const output::PsRenderOptions& options) {
  auto rendered = output::render_ps_command(snapshot, options);
  // A GPU that logged a critical error looks healthy in the table: one line on stderr says so.
  if (kernel_log)
    if (auto note = output::kernel_note(*kernel_log)) rendered.err.push_back(*note);
  return rendered;
}

// The daemon's latest sample, for a plain `ps` (not --watch) when it may answer
// (cli/daemon_client.h).
std::optional<daemon::EvidenceAnswer> from_daemon(const GlobalOptions& g, const PsOptions& o) {
  auto path = daemon_socket(g, o.no_daemon);
  if (!path) return std::nullopt;
  base::Phase phase("daemon answer");
  return ask_daemon_evidence(*path, std::chrono::milliseconds(0));
}

// The options checked and the collector opened here; the loop is tui's.
int run_ps_watch(const GlobalOptions& g, const PsOptions& o, output::PsSort sort) {
  if (g.csv)
    return fail({"--watch cannot print CSV",
                 "use --watch alone for the table, or --watch --json for JSON lines"});
  tui::PsWatchOptions watch{.every = o.watch->empty() ? "2s" : *o.watch,
                            .tree = o.tree,
                            .json = g.json,
                            .no_color = g.no_color,
                            .unicode = output::locale_speaks_utf8(),
                            .compact = o.compact};
  auto interval = core::parse_duration(watch.every);
  if (!interval) return fail({"--watch: " + interval.error().message, interval.error().hint});
  if (*interval < std::chrono::milliseconds(100))
    return fail({"--watch " + watch.every + " is too short", "use 100ms or more"});
  watch.interval = *interval;
  watch.select = {.users = o.users, .pids = o.pids, .sort = sort};
  if (auto gpus = output::add_gpu_values(watch.select, o.gpus); !gpus) return fail(gpus.error());
  // A wedged driver must not freeze the screen: the driver gets a deadline, /proc stays live.
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  auto backend = collector->drivers();
  // A typo is an error before the screen starts, not an empty screen every interval.
  if (auto bad = output::check_selection(collector->collect(), watch.select))
    return fail_scope(*bad);
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
  ps->add_option("--gpu", o.gpus,
                 "only the processes on GPU N (repeatable), and only its line; N/G or an "
                 "instance's UUID: only those in GPU instance G")
      ->type_name("N");
  ps->add_option("--user", o.users, "only the processes of user U (a name or a uid; repeatable)")
      ->type_name("U");
  ps->add_option("--pid", o.pids, "only process P (repeatable)")->type_name("PID");
  ps->add_option("--sort", o.sort,
                 "order within each GPU's rows: pid (default), memory, age (oldest first), user")
      ->type_name("KEY");
  ps->add_flag("--compact", o.compact,
               "one line per GPU: utilisation, temperature, memory, and who uses it");
  ps->add_flag("-v,--verbose", o.verbose,
               "also the notes every run repeats (processes the kernel hides from inspection)");
  ps->footer(
      "Columns: CPU% is the CPU time used over the process's life (as ps(1) computes it), RSS "
      "its resident memory, TIME the CPU time used, AGE how long it has run. Rows are grouped "
      "by the first GPU each process uses.");
  return ps;
}

int run_ps(const GlobalOptions& g, const PsOptions& o) {
  if (g.json && g.csv)
    return fail({"--json and --csv cannot be combined", "choose one output format"});
  auto sort = output::parse_ps_sort(o.sort);
  if (!sort) return fail({"--sort: " + sort.error().message, sort.error().hint});
  for (pid_t pid : o.pids)
    if (pid <= 0) return fail({"`" + std::to_string(pid) + "` is not a PID", "PIDs start at 1"});
  if (o.compact && (g.json || g.csv || o.tree))
    return fail({"--compact is a table of its own", "use it without --json, --csv and --tree"});
  if (o.watch) return run_ps_watch(g, o, *sort);
  output::PsSelection gpus;
  if (auto ok = output::add_gpu_values(gpus, o.gpus); !ok) return fail(ok.error());
  output::PsRenderOptions render{
      .format = g.json  ? output::PsFormat::Json
                : g.csv ? output::PsFormat::Csv
                        : output::PsFormat::Table,
      .tree = o.tree,
      .width = output::fit_width(terminal_width(), std::getenv("COLUMNS")),
      .color = output::Style::for_stdout(g.no_color).enabled(),
      .select = {.users = o.users, .pids = o.pids, .sort = *sort},
      .compact = o.compact,
      .unicode = output::locale_speaks_utf8(),
      .verbose = o.verbose};
  render.select.gpus = gpus.gpus;
  render.select.gpu_places = gpus.gpu_places;
  if (auto served = from_daemon(g, o)) {
    render.daemon_age = std::chrono::milliseconds(served->snapshot_age_ms);
    std::optional<base::Phase> phase(std::in_place, "rendering");
    auto rendered = ps_output(*served->evidence.last, served->evidence.kernel.get(), render);
    phase.emplace("printing");
    return print_command_output(rendered.out, rendered.err, rendered.exit_code);
  }
  std::optional<base::Phase> phase(std::in_place, "collector setup");
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  phase.reset();
  auto snapshot = collector->collect();
  phase.emplace("kernel log");
  auto kernel_log = collector->kernel_log(snapshot);
  phase.emplace("rendering");
  auto rendered = ps_output(snapshot, &kernel_log, render);
  phase.emplace("printing");
  const int status = print_command_output(rendered.out, rendered.err, rendered.exit_code);
  phase.reset();  // before the collector closes the driver libraries, each with a phase of its own
  return status;
}

}  // namespace gpureap::cli
