// `gpureap kill`: plan → confirm → signal → wait → verify that the memory is back.
#include "cli/cmd_kill.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "cli/announce.h"
#include "cli/confirm.h"
#include "cli/daemon_client.h"
#include "cli/kernel_releases.h"
#include "core/duration.h"
#include "core/gpu_resolve.h"
#include "output/kill_view.h"
#include "output/snapshot_json.h"
#include "output/table.h"
#include "output/view_incomplete.h"
#include "reap/arguments.h"
#include "reap/collector_world.h"
#include "reap/outcome.h"
#include "reap/pipeline.h"
#include "reap/report_json.h"

namespace gpureap::cli {
namespace {

using SystemClock = std::chrono::system_clock;

// The width the plan and the results fit: the terminal's, else COLUMNS.
std::optional<size_t> width() {
  return output::fit_width(terminal_width(), std::getenv("COLUMNS"));
}

core::Result<reap::KillSettings> settings_from(const KillOptions& o) {
  reap::KillSettings k;
  k.request = {.pids = o.pids,
               .gpu = o.gpu,
               .user = o.user,
               .ghosts = o.ghosts,
               .stopped = o.stopped,
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
  k.exec.kill_wait = reap::kill_wait_for(*grace);
  auto wait = core::parse_duration(o.wait_release);
  if (!wait) return core::Error{"--wait-release: " + wait.error().message, wait.error().hint};
  k.verify.wait_release = *wait;
  for (pid_t pid : o.pids)
    if (pid <= 0)
      return core::Error{"invalid PID " + std::to_string(pid), "PIDs are positive numbers"};
  return k;
}

// The plan before anything is signalled: shown, and asked about on a terminal. Without a go-ahead
// `declined` is the exit status.
struct PlanDialog {
  const GlobalOptions& g;
  const KillOptions& o;
  const reap::KillSettings& settings;
  const core::Snapshot& snapshot;
  const std::string& proceed;
  std::ostream& out;  // the human text
  output::Style style = output::Style::for_stdout(g.no_color);
  int declined = kExitOk;

  void show(const reap::Plan& plan, std::ostream& to) const {
    to << output::render_plan(snapshot, plan, settings, style, width());
  }

  bool go_ahead(const reap::Plan& plan) {
    size_t to_signal = plan.count(reap::Action::Signal);
    bool act = to_signal > 0 || plan.count(reap::Action::Zombie) > 0;
    if (o.dry_run || !act) {
      if (g.json)
        std::cout << output::dump_json(reap::kill_to_json(snapshot, plan, settings, nullptr))
                  << "\n";
      else
        show(plan, out);
      declined = reap::plan_exit_code(plan);
      return false;
    }
    bool shown = false;
    if (!o.yes && to_signal > 0) {
      // The question is asked where a person reads it: stderr when stdout is a pipe.
      std::ostream& ask_on = g.json || !::isatty(STDOUT_FILENO) ? std::cerr : out;
      show(plan, ask_on);
      shown = true;
      if (!::isatty(STDIN_FILENO)) {
        fail({"not on a terminal, so gpureap cannot ask before killing " +
                  std::to_string(to_signal) + " process(es); nothing was signalled",
              proceed});
        declined = kExitUsage;
        return false;
      }
      if (!ask(
              "Kill " + std::to_string(to_signal) + " process" + (to_signal == 1 ? "" : "es") + "?",
              ask_on)) {
        ask_on << "Nothing was signalled.\n";
        declined = kExitFailed;
        return false;
      }
    }
    if (!g.json && !shown) show(plan, out);
    if (!g.json) out << std::flush;
    return true;
  }
};

std::vector<pid_t> signalled(const reap::Plan& plan) {
  std::vector<pid_t> pids;
  for (const auto& t : plan.targets)
    if (t.action == reap::Action::Signal) pids.push_back(t.pid);
  return pids;
}

}  // namespace

std::string kill_command_text(const KillOptions& o) {
  std::vector<std::string> words{"gpureap", "kill"};
  for (pid_t pid : o.pids) words.push_back(std::to_string(pid));
  if (o.ghosts) words.push_back("--ghosts");
  if (o.stopped) words.push_back("--stopped");
  if (o.gpu_spec)
    words.insert(words.end(), {"--gpu", *o.gpu_spec});
  else if (o.gpu)
    words.insert(words.end(), {"--gpu", std::to_string(*o.gpu)});
  if (o.user) words.insert(words.end(), {"--user", *o.user});
  if (o.tree) words.push_back("--tree");
  if (o.group) words.push_back("--group");
  if (o.signal != "TERM") words.insert(words.end(), {"--signal", o.signal});
  return command_words(words);
}

CLI::App* add_kill_command(CLI::App& app, KillOptions& o) {
  auto* kill = app.add_subcommand(
      "kill", "reclaim GPU memory: plan, confirm, signal, then verify that the memory is back");
  kill->add_option("pid", o.pids,
                   "PIDs to kill; a gone PID the driver lists means the processes that keep its "
                   "memory");
  kill->add_flag("--ghosts", o.ghosts,
                 "the processes that keep ghost memory alive: inherited holders of gone PIDs and "
                 "orphaned holders (never a paused job: see --stopped)");
  kill->add_flag("--stopped", o.stopped,
                 "holders that are stopped (paused with Ctrl-Z or SIGSTOP); `kill -CONT PID` "
                 "resumes one instead");
  kill->add_option("--gpu", o.gpu_spec,
                   "with a selector: only what it chose on GPU N; alone: every holder of GPU N "
                   "(its index in `gpureap ps`; N/G or an instance's UUID: only GPU instance G)");
  kill->add_option("--user", o.user,
                   "with a selector or --gpu: only processes of this user (name or uid); alone: "
                   "all their GPU processes");
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
  kill->add_flag("--no-daemon", o.no_daemon,
                 "decide from this command's own scan alone, without the gpureap daemon's "
                 "record of when each listed PID was first seen");
  kill->footer(
      "Selectors choose: PIDs, --ghosts, --stopped. Given one, --gpu and --user only narrow what "
      "it chose (a filter never adds a process); --gpu or --user alone choose their holders. "
      "--tree and --group then add the chosen processes' descendants or process groups.\n"
      "  gpureap kill --ghosts --gpu 0      the ghosts' keepers on GPU 0, nothing else\n"
      "  gpureap kill --ghosts --user bob   bob's ghost keepers\n"
      "  gpureap kill --gpu 1 --user bob    bob's holders of GPU 1\n"
      "  gpureap kill 4242 --gpu 0          PID 4242, if it is on GPU 0\n"
      "  gpureap kill --ghosts --gpu 0/3    only GPU instance 3's keepers\n"
      "A GPU is mapped to its device files only by its driver or, when the driver does not "
      "answer, by its kernel module's own listing; otherwise --gpu is refused (exit 4).");
  return kill;
}

int run_kill(const GlobalOptions& g, const KillOptions& options) {
  if (g.csv) return fail({"gpureap kill has no CSV output", "use --json"});
  KillOptions o = options;
  if (o.gpu_spec) {
    // A typo is told before anything is collected; resolve_gpu says the same words later.
    auto ref = core::parse_gpu_option(*o.gpu_spec);
    if (!ref) return fail(ref.error());
  }
  if (o.pids.empty() && !o.gpu && !o.gpu_spec && !o.ghosts && !o.stopped && !o.user)
    return fail({"nothing to kill was named",
                 "give PIDs, --ghosts, --stopped, --gpu N or --user NAME (see gpureap kill "
                 "--help)"});
  auto settings = settings_from(o);
  if (!settings) return fail(settings.error());
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  // The daemon has watched the driver's lists; one look cannot tell the listed process from
  // one that took its number since (core/listed_sightings.h).
  adopt_daemon_sightings(*collector, ask_daemon_sightings(g, o.no_daemon));
  reap::CollectorWorld world(*collector);
  auto started = SystemClock::now();
  if (!o.dry_run && !world.signals_reach())
    return fail({"cannot signal processes read from " + g.proc_root +
                     ": it is not the procfs of gpureap's own PID namespace",
                 "use --dry-run to see the plan, or run gpureap where those processes live"});
  auto snapshot = collector->collect();
  if (o.gpu_spec) {
    auto gpu = core::resolve_gpu(snapshot, *o.gpu_spec);
    if (gpu.problem) return fail_scope(*gpu.problem);
    o.gpu = gpu.place.index;
    settings->request.gpu = gpu.place.index;
    if (gpu.place.gpu_instance) settings->request.instance = gpu.place;
  }
  if (g.json && !snapshot.complete())  // the human plan says so itself
    std::cerr << "gpureap: " << output::view_incomplete(snapshot) << "\n";
  int code = kill_on_snapshot(g, o, settings->request, world, snapshot, started,
                              "pass --yes to kill them, or --dry-run to see the plan", std::cout)
                 .exit_code;
  std::cout << std::flush;
  // The plan came from /proc alone and no release could be verified: say so in the status.
  return report_driver_timeout(snapshot) && code != kExitUsage ? kExitDriverTimeout : code;
}

KillRun kill_on_snapshot(const GlobalOptions& g, const KillOptions& o, const reap::Request& request,
                         const reap::World& world, const core::Snapshot& snapshot,
                         std::chrono::system_clock::time_point started, const std::string& proceed,
                         std::ostream& out) {
  auto settings = settings_from(o);
  if (!settings) return {false, fail(settings.error())};
  settings->request = request;
  PlanDialog dialog{g, o, *settings, snapshot, proceed, out};
  // The daemon hears of it first, so its audit log and report say who ended what.
  reap::Progress progress;
  const std::string by = o.announce_as.empty() ? kill_command_text(o) : o.announce_as;
  const int first_signal = settings->exec.signal;
  progress.signalling = [&](const reap::Plan& plan) { announce_plan(by, first_signal, plan); };
  reap::Pipeline pipeline(world, {settings->exec, settings->verify}, std::move(progress));
  auto reaped = pipeline.run(
      snapshot, settings->request, [&](reap::Plan& plan) { return dialog.go_ahead(plan); },
      started);
  if (!reaped) return {false, fail(reaped.error())};
  if (!reaped->carried_out) return {false, dialog.declined};
  const auto& report = reaped->report;
  auto kernel =
      kernel_releases(signalled(reaped->plan),
                      report.timing.signalled.value_or(report.timing.started), o.no_daemon);
  if (g.json) {
    auto doc = reap::kill_to_json(snapshot, reaped->plan, *settings, &report);
    doc["kernel_releases"] = kernel_releases_json(kernel);
    std::cout << output::dump_json(doc) << "\n";
  } else {
    out << "\n"
        << output::render_results(reaped->plan, report, dialog.style, width())
        << kernel_releases_text(kernel, report);
  }
  return {true, report.exit_code};
}

}  // namespace gpureap::cli
