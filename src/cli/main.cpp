// gpureap: find, explain and reclaim GPU memory held by processes.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/cmd_ps.h"
#include "cli/global_options.h"

int main(int argc, char** argv) {
  using namespace gpureap::cli;
  CLI::App app{"gpureap: find every process holding GPU memory, explain ghosts, get the memory back",
               "gpureap"};
  app.set_version_flag("--version", std::string("gpureap ") + GPUREAP_VERSION);
  app.require_subcommand(0, 1);
  app.fallthrough();  // global options are accepted after the subcommand too
  app.footer("Without a subcommand, gpureap runs `ps`.");

  GlobalOptions global;
  add_global_options(app, global);
  PsOptions ps_options;
  auto* ps = add_ps_command(app, ps_options);
  // `gpureap --tree` is `gpureap ps --tree`.
  app.add_flag("--tree", ps_options.tree, "same as `ps --tree`")->group("ps");

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  (void)ps;
  return run_ps(global, ps_options);
}
