#include "cli/cmd_ps.h"

#include <iostream>

#include "cli/ps_watch.h"
#include "output/escape.h"
#include "output/ps_view.h"
#include "output/snapshot_json.h"
#include "output/view_incomplete.h"

namespace gpureap::cli {

CLI::App* add_ps_command(CLI::App& app, PsOptions& o) {
  auto* ps = app.add_subcommand(
      "ps", "show every process that holds GPU memory or GPU device files (default)");
  ps->add_flag("--tree", o.tree, "show the holders inside their process tree");
  ps->add_option(
        "--watch", o.watch,
        "re-render in place every INTERVAL (default 2s); with --json one snapshot per line")
      ->expected(0, 1)
      ->type_name("[INTERVAL]");
  return ps;
}

int run_ps(const GlobalOptions& g, const PsOptions& o) {
  if (g.json && g.csv)
    return fail({"--json and --csv cannot be combined", "choose one output format"});
  if (o.watch) return run_ps_watch(g, o);
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  auto snapshot = collector->collect();
  if (!g.json)
    for (const auto* list :
         {&snapshot.warnings, &snapshot.proc.warnings, &snapshot.backend.warnings})
      for (const auto& w : *list)
        std::cerr << "gpureap: note: " << output::terminal_safe(w) << "\n";
  if (!snapshot.complete()) std::cerr << "gpureap: " << output::view_incomplete(snapshot) << "\n";
  if (g.json) {
    std::cout << output::dump_json(output::snapshot_to_json(snapshot)) << "\n";
  } else if (g.csv) {
    std::cout << output::render_ps_csv(snapshot);
  } else {
    auto style = output::Style::for_stdout(g.no_color);
    std::cout << output::render_ps(snapshot, style, {o.tree, terminal_width()});
  }
  std::cout << std::flush;
  return report_driver_timeout(snapshot) ? kExitDriverTimeout : kExitOk;
}

}  // namespace gpureap::cli
