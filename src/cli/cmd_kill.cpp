// `gpureap kill`: plan → confirm → signal → wait → verify that the memory is back.
#include "cli/cmd_kill.h"

#include <unistd.h>

#include <chrono>
#include <iostream>

#include "core/duration.h"
#include "output/snapshot_json.h"
#include "reap/arguments.h"
#include "reap/executor.h"
#include "reap/outcome.h"
#include "reap/planner.h"
#include "reap/report_json.h"
#include "reap/report_text.h"
#include "reap/safety.h"
#include "reap/verifier.h"

namespace gpureap::cli {
namespace {

using SystemClock = std::chrono::system_clock;

core::Result<reap::KillSettings> settings_from(const KillOptions& o) {
  reap::KillSettings k;
  k.request = {.pids = o.pids,
               .gpu = o.gpu,
               .user = o.user,
               .ghosts = o.ghosts,
               .tree = o.tree,
               .group = o.group};
  k.dry_run = o.dry_run;
  k.exec.escalate = !o.no_escalate;
  auto signal = reap::parse_signal(o.signal);
  if (!signal) return core::Error{"--signal: " + signal.error().message, signal.error().hint};
  k.exec.signal = *signal;
  auto grace = core::parse_duration(o.grace);
  if (!grace) return core::Error{"--grace: " + grace.error().message, grace.error().hint};
  k.exec.grace = *grace;
  // SIGKILL acts at once unless the task sleeps in the kernel: a short, bounded wait.
  k.exec.kill_wait =
      std::clamp(*grace, std::chrono::milliseconds(1000), std::chrono::milliseconds(5000));
  auto wait = core::parse_duration(o.wait_release);
  if (!wait) return core::Error{"--wait-release: " + wait.error().message, wait.error().hint};
  k.verify.wait_release = *wait;
  for (pid_t pid : o.pids)
    if (pid <= 0)
      return core::Error{"invalid PID " + std::to_string(pid), "PIDs are positive numbers"};
  return k;
}

// The question is asked where a person reads it: stdout, or stderr when stdout is a pipe.
bool confirm(size_t count, std::ostream& out) {
  out << "Kill " << count << " process" << (count == 1 ? "" : "es") << "? [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes" || answer == "YES" || answer == "Yes";
}

}  // namespace

CLI::App* add_kill_command(CLI::App& app, KillOptions& o) {
  auto* kill = app.add_subcommand(
      "kill", "reclaim GPU memory: plan, confirm, signal, then verify that the memory is back");
  kill->add_option(
      "pid", o.pids,
      "PIDs to kill; a gone PID the driver lists means the processes that keep its memory");
  kill->add_option("--gpu", o.gpu, "every holder of GPU N (its index in `gpureap ps`)");
  kill->add_option("--user", o.user,
                   "only processes of this user (name or uid); alone: all their GPU processes");
  kill->add_flag(
      "--ghosts", o.ghosts,
      "every process that keeps ghost memory alive (inherited holders, orphans, stopped holders)");
  auto* tree = kill->add_flag("--tree", o.tree, "also every descendant of the targets");
  kill->add_flag("--group", o.group, "also every member of the targets' process groups")
      ->excludes(tree);
  kill->add_option("--signal", o.signal, "first signal (name or number)")->capture_default_str();
  kill->add_option("--grace", o.grace, "wait this long before SIGKILL (500ms, 10s, 1m)")
      ->capture_default_str();
  kill->add_flag("--no-escalate", o.no_escalate, "never send SIGKILL");
  kill->add_option("--wait-release", o.wait_release, "wait this long for the memory to be released")
      ->capture_default_str();
  kill->add_flag("--dry-run", o.dry_run, "print the plan and stop");
  kill->add_flag("-y,--yes", o.yes, "do not ask (required when not on a terminal)");
  kill->footer(
      "Exit status: 0 all gone and released; 1 something survived or memory stayed held; "
      "2 usage, permission or environment error; 3 nothing matched.");
  return kill;
}

int run_kill(const GlobalOptions& g, const KillOptions& o) {
  if (g.csv) return fail({"gpureap kill has no CSV output", "use --json"});
  if (o.pids.empty() && !o.gpu && !o.ghosts && !o.user)
    return fail({"nothing to kill was named",
                 "give PIDs, --gpu N, --ghosts or --user NAME (see gpureap kill --help)"});
  auto settings = settings_from(o);
  if (!settings) return fail(settings.error());
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  auto started = SystemClock::now();
  if (!o.dry_run && !collector->procfs().names_own_processes())
    return fail({"cannot signal processes read from " + g.proc_root +
                     ": it is not the procfs of gpureap's own PID namespace",
                 "use --dry-run to see the plan, or run gpureap where those processes live"});
  auto snapshot = collector->collect();
  if (g.json && !snapshot.complete())  // the human plan says so itself
    std::cerr << "gpureap: view incomplete: " << snapshot.proc.uninspectable
              << " processes could not be inspected; run as root or grant CAP_SYS_PTRACE\n";
  int code = kill_on_snapshot(g, o, settings->request, *collector, snapshot, started,
                              "pass --yes to kill them, or --dry-run to see the plan")
                 .exit_code;
  std::cout << std::flush;
  // The plan came from /proc alone and no release could be verified: say so in the status.
  return report_driver_timeout(snapshot) && code != kExitUsage ? kExitDriverTimeout : code;
}

KillRun kill_on_snapshot(const GlobalOptions& g, const KillOptions& o, const reap::Request& request,
                         const collect::Collector& collector, const core::Snapshot& snapshot,
                         std::chrono::system_clock::time_point started,
                         const std::string& proceed) {
  auto settings = settings_from(o);
  if (!settings) return {false, fail(settings.error())};
  settings->request = request;
  reap::Report report;
  report.timing.started = started;
  const procfs::ProcFs& proc = collector.procfs();
  auto details = [&proc](const core::HostProcess& p) {
    return proc.read_details(p.stat.pid, p.stat.state == 'D').details;
  };
  auto plan = reap::make_plan(snapshot, settings->request, reap::current_caller(snapshot), details);
  if (!plan) return {false, fail(plan.error())};

  auto style = output::Style::for_stdout(g.no_color);
  auto print_plan = [&](std::ostream& out) {
    out << reap::render_plan(snapshot, *plan, *settings, style, terminal_width());
  };
  size_t to_signal = plan->count(reap::Action::Signal);
  bool act = to_signal > 0 || plan->count(reap::Action::Zombie) > 0;
  if (o.dry_run || !act) {
    if (g.json)
      std::cout << output::dump_json(reap::kill_to_json(snapshot, *plan, *settings, nullptr))
                << "\n";
    else
      print_plan(std::cout);
    return {false, reap::plan_exit_code(*plan)};
  }
  bool plan_shown = false;
  if (!o.yes && to_signal > 0) {
    std::ostream& out = g.json || !::isatty(STDOUT_FILENO) ? std::cerr : std::cout;
    print_plan(out);
    plan_shown = true;
    if (!::isatty(STDIN_FILENO)) {
      fail({"not on a terminal, so gpureap cannot ask before killing " + std::to_string(to_signal) +
                " process(es); nothing was signalled",
            proceed});
      return {false, kExitUsage};
    }
    if (!confirm(to_signal, out)) {
      out << "Nothing was signalled.\n";
      return {false, reap::kExitHeld};
    }
  }
  if (!g.json && !plan_shown) print_plan(std::cout);
  if (!g.json) std::cout << std::flush;

  report.timing.signalled = SystemClock::now();
  auto executions = reap::Executor(proc, settings->exec).run(*plan);
  auto verification =
      reap::verify(*plan, executions, reap::release_source(collector), settings->verify);
  auto timing = report.timing;
  timing.verified = SystemClock::now();
  report = reap::compose(*plan, executions, verification);
  timing.last_exit = report.timing.last_exit;
  report.timing = timing;
  report.timing.report = SystemClock::now();
  if (g.json)
    std::cout << output::dump_json(reap::kill_to_json(snapshot, *plan, *settings, &report)) << "\n";
  else
    std::cout << "\n" << reap::render_results(*plan, report, style, terminal_width());
  return {true, report.exit_code};
}

}  // namespace gpureap::cli
