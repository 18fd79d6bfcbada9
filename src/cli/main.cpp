// gpureap: find, explain and reclaim GPU memory held by processes.
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <vector>

#include "base/version.h"
#include "cli/cmd_audit.h"
#include "cli/cmd_cluster.h"
#include "cli/cmd_daemon.h"
#include "cli/cmd_doctor.h"
#include "cli/cmd_kill.h"
#include "cli/cmd_list.h"
#include "cli/cmd_policy.h"
#include "cli/cmd_ps.h"
#include "cli/cmd_report.h"
#include "cli/cmd_reset.h"
#include "cli/cmd_run.h"
#include "cli/cmd_top.h"
#include "cli/exit_status_table.h"
#include "cli/global_options.h"
#include "cli/help_format.h"
#include "cli/usage_error.h"

int main(int argc, char** argv) {
  using namespace gpureap::cli;
  CLI::App app{
      "gpureap: find every process holding GPU memory, explain ghosts, get the memory back",
      "gpureap"};
  // Before the subcommands: each copies its parent's formatter and help flag when added.
  app.formatter(make_help_formatter(terminal_width()));
  app.set_help_flag("-h,--help", "print this help and exit");
  app.set_version_flag("--version", "gpureap " + std::string(gpureap::base::version()),
                       "print gpureap's version and exit");
  app.require_subcommand(0, 1);
  app.fallthrough();  // global options are accepted after the subcommand too

  GlobalOptions global;
  add_global_options(app, global);
  // Each subcommand is added and dispatched by one line, so none can be added without the
  // code that runs it. The options live here, for the whole run.
  struct Command {
    CLI::App* app;
    std::function<int()> run;
  };
  std::vector<Command> commands;
  auto subcommand = [&](auto& options, auto add, auto run) {
    commands.push_back(
        {add(app, options), [&global, &options, run] { return run(global, options); }});
  };
  PsOptions ps_options;
  subcommand(ps_options, add_ps_command, run_ps);
  KillOptions kill_options;
  subcommand(kill_options, add_kill_command, run_kill);
  // `gpureap --tree` is `gpureap ps --tree`.
  app.add_flag("--tree", ps_options.tree, "same as `gpureap ps --tree`");
  DoctorOptions doctor_options;
  subcommand(doctor_options, add_doctor_command, run_doctor);
  ResetOptions reset_options;
  subcommand(reset_options, add_reset_command, run_reset);
  DaemonCliOptions daemon_options;
  subcommand(daemon_options, add_daemon_command, run_daemon_command);
  RunCliOptions run_options;
  subcommand(run_options, add_run_command, run_run);
  TopOptions top_options;
  subcommand(top_options, add_top_command, run_top);
  PolicyOptions policy_options;
  subcommand(policy_options, add_policy_command, run_policy);
  AuditOptions audit_options;
  subcommand(audit_options, add_audit_command, run_audit);
  ListOptions list_options;
  subcommand(list_options, add_list_command, run_list);
  ReportOptions report_options;
  subcommand(report_options, add_report_command, run_report);
  ClusterOptions cluster_options;
  subcommand(cluster_options, add_cluster_command, run_cluster);
  // After the subcommands: CLI11 copies a footer into every subcommand added after it.
  app.footer("Without a subcommand, gpureap runs `ps`.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's message quotes the arguments as typed: escaped before they reach the terminal.
    std::cerr << "gpureap: " << usage_error_text(app, e, {argv + 1, argv + argc}) << "\n";
    // Each command's own usage status (cli/exit_status_table.h): `run` follows timeout(1) (125,
    // apart from the job's statuses), `doctor`'s 2 means critical findings.
    std::string command;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      if (sub->parsed()) command = sub->get_name();
    return usage_exit_code(command);
  }
  note_given_options(app, global);
  for (const Command& c : commands)
    if (c.app->parsed()) return c.run();
  return run_ps(global, ps_options);  // no subcommand: `ps`, as the footer says
}
