#include "cli/cmd_list.h"

#include <unistd.h>

#include <iostream>

#include "core/gpu_place.h"
#include "doctor/finding_code.h"
#include "reap/arguments.h"
#include "text/escape.h"

namespace gpureap::cli {
namespace {

// The GPUs' global indices, as `ps`, `kill --gpu`, `doctor --gpu` and `reset --gpu` number
// them, with the name as a shell shows a completion's description; with `places`, each
// GPU's instances after it in the N/G notation `ps`, `kill` and `doctor` take (`reset` takes
// whole GPUs only). Only the drivers are read: a completion must not wait for a scan of /proc.
int list_gpus(const GlobalOptions& g, bool places) {
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  for (const auto& gpu : collector->read_drivers().gpus) {
    std::cout << gpu.index;
    // A name comes from the driver: no tab, newline or control character may split the line.
    if (gpu.name) std::cout << '\t' << text::terminal_safe(*gpu.name);
    std::cout << '\n';
    if (!places) continue;
    for (unsigned gi : core::gpu_instance_ids(gpu))
      std::cout << core::instance_place(gpu.index, gi) << '\t'
                << text::terminal_safe(core::instance_words(*core::find_instance(gpu, gi))) << '\n';
  }
  // A driver that did not answer keeps a thread: leave without waiting for it.
  if (collector->drivers()->threads_stuck()) {
    std::cout << std::flush;
    ::_exit(kExitOk);
  }
  return kExitOk;
}

}  // namespace

CLI::App* add_list_command(CLI::App& app, ListOptions& o) {
  auto* cmd = app.add_subcommand("list", "values for shell completion, one per line");
  cmd->group("");  // plumbing for completions/, not a command people type
  cmd->add_option("kind", o.kind, "gpus, gpu-places, finding-codes or signals")
      ->required()
      ->check(CLI::IsMember({"gpus", "gpu-places", "finding-codes", "signals"}));
  return cmd;
}

int run_list(const GlobalOptions& g, const ListOptions& o) {
  if (o.kind == "gpus" || o.kind == "gpu-places") return list_gpus(g, o.kind == "gpu-places");
  if (o.kind == "finding-codes")
    for (auto code : doctor::all_finding_codes()) std::cout << doctor::to_string(code) << '\n';
  if (o.kind == "signals")
    for (const auto& name : reap::signal_names()) std::cout << name << '\n';
  return kExitOk;
}

}  // namespace gpureap::cli
