// gpureap: find, explain and reclaim GPU memory held by processes.
#include <CLI/CLI.hpp>
#include <iostream>

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
  PsOptions ps_options;
  auto* ps = add_ps_command(app, ps_options);
  KillOptions kill_options;
  auto* kill = add_kill_command(app, kill_options);
  // `gpureap --tree` is `gpureap ps --tree`.
  app.add_flag("--tree", ps_options.tree, "same as `gpureap ps --tree`");
  DoctorOptions doctor_options;
  auto* doctor = add_doctor_command(app, doctor_options);
  ResetOptions reset_options;
  auto* reset = add_reset_command(app, reset_options);

  DaemonCliOptions daemon_options;
  auto* daemon = add_daemon_command(app, daemon_options);

  RunCliOptions run_options;
  auto* run = add_run_command(app, run_options);

  TopOptions top_options;
  auto* top = add_top_command(app, top_options);

  PolicyOptions policy_options;
  auto* policy = add_policy_command(app, policy_options);
  AuditOptions audit_options;
  auto* audit = add_audit_command(app, audit_options);
  ListOptions list_options;
  auto* list = add_list_command(app, list_options);
  ReportOptions report_options;
  auto* report = add_report_command(app, report_options);
  ClusterOptions cluster_options;
  auto* cluster = add_cluster_command(app, cluster_options);
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
  (void)ps;
  note_given_options(app, global);
  if (run->parsed()) return run_run(global, run_options);
  if (top->parsed()) return run_top(global, top_options);
  if (doctor->parsed()) return run_doctor(global, doctor_options);
  if (reset->parsed()) return run_reset(global, reset_options);
  if (kill->parsed()) return run_kill(global, kill_options);
  if (daemon->parsed()) return run_daemon_command(global, daemon_options);
  if (policy->parsed()) return run_policy(global, policy_options);
  if (audit->parsed()) return run_audit(global, audit_options);
  if (list->parsed()) return run_list(global, list_options);
  if (report->parsed()) return run_report(global, report_options);
  if (cluster->parsed()) return run_cluster(global, cluster_options);
  return run_ps(global, ps_options);
}
