#include "cli/cmd_doctor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "backend/backend_set.h"
#include "cli/cmd_kill.h"
#include "cli/daemon_client.h"
#include "collect/collector.h"
#include "collect/identity_recheck.h"
#include "core/duration.h"
#include "core/gpu_resolve.h"
#include "doctor/examine.h"
#include "doctor/fixable.h"
#include "doctor/settle.h"
#include "output/doctor_command.h"
#include "output/doctor_view.h"
#include "output/pager.h"
#include "output/snapshot_json.h"
#include "reap/collector_world.h"
#include "reap/safety.h"
#include "text/display_width.h"
#include "text/escape.h"

namespace gpureap::cli {
namespace {

static_assert(output::kDoctorExitHealthy == kDoctorHealthy &&
              output::kDoctorExitWarnings == kDoctorWarnings &&
              output::kDoctorExitCritical == kDoctorCritical &&
              output::kDoctorExitDriverTimeout == kExitDriverTimeout);

// The options, checked before anything is collected.
struct DoctorRun {
  std::chrono::milliseconds settle{};
  std::vector<doctor::FindingCode> only;
  doctor::UnattributedThreshold threshold;
  // The daemon's setting when it answers; one-shot, doctor's default.
  std::chrono::milliseconds stalled_job_critical_after = doctor::kStalledJobCriticalAfter;
};

// What the findings are about, for whom (options already resolved to a GPU and instance).
doctor::Scope scope(const DoctorOptions& o, const DoctorRun& run, doctor::Reader reader) {
  return {.gpu = o.gpu,
          .instance = o.instance,
          .only = run.only,
          .unattributed = run.threshold,
          .stalled_job_critical_after = run.stalled_job_critical_after,
          .reader = reader};
}

core::Result<DoctorRun> check_options(const DoctorOptions& o) {
  DoctorRun run;
  auto settle = core::parse_duration(o.settle);
  if (!settle) return settle.error();
  run.settle = *settle;
  auto only = doctor::parse_finding_codes(o.only);
  if (!only) return core::Error{"--only: " + only.error().message, only.error().hint};
  run.only = *only;
  if (o.unattributed_threshold) {
    auto t = doctor::parse_unattributed_threshold(*o.unattributed_threshold);
    if (!t) return core::Error{"--unattributed-threshold: " + t.error().message, t.error().hint};
    run.threshold = *t;
  }
  return run;
}

// The columns to wrap to: the terminal's; into a pipe none, unless COLUMNS was exported.
size_t text_width() {
  if (auto w = terminal_width()) return *w;
  if (const char* c = std::getenv("COLUMNS")) {
    char* end = nullptr;
    long n = std::strtol(c, &end, 10);
    if (end != c && *end == '\0' && n > 0 && n < 10000) return static_cast<size_t>(n);
  }
  return 0;
}

output::DoctorRenderOptions render_options(const GlobalOptions& g, const DoctorOptions& o) {
  return {.json = g.json,
          .color = output::Style::for_stdout(g.no_color).enabled(),
          .gpu = o.gpu,
          .verbose = o.verbose,
          .width = text_width(),
          .unicode = output::locale_speaks_utf8(),
          .instance = o.instance};
}

// Prints a doctor's report: warnings on stderr, the report through the pager on a terminal.
int print_report(const std::string& out, const std::vector<std::string>& err, int exit_code,
                 const DoctorOptions& o) {
  for (const auto& line : err) std::cerr << line << "\n";
  output::page(out, output::pager_for_stdout(o.no_pager));
  return exit_code;
}

// The processes doctor's findings chose, each with the reason: none is "named", so the reaper's
// protected list and its other rules still apply.
reap::Request fix_request(const std::vector<doctor::Finding>& findings, const DoctorOptions& o) {
  reap::Request request;
  request.chosen_by = "doctor's remedies";
  request.gpu = o.gpu;  // filters: a finding about another GPU's ghost is not fixed here
  request.instance = o.instance;
  for (const auto& f : doctor::fixable(findings))
    request.chosen.push_back(f.stalled_job
                                 ? reap::Chosen{f.pid, reap::ReasonKind::StalledJob, std::nullopt}
                                 : reap::Chosen{f.pid, reap::ReasonKind::Ghost, f.anomaly});
  return request;
}

// The findings on `evidence` in this command's scope: the command's own samples, or the
// daemon's.
std::vector<doctor::Finding> findings_of(const doctor::Evidence& evidence, const DoctorOptions& o,
                                         const DoctorRun& run) {
  // Without the kernel log doctor still diagnoses everything else: say so once.
  if (evidence.kernel && evidence.kernel->problem)
    std::cerr << "gpureap: " << text::terminal_safe(*evidence.kernel->problem) << "\n";
  // What this process could read, its user may see; the daemon sends a user nothing more.
  return doctor::examine(evidence, scope(o, run, doctor::Reader::Privileged),
                         reap::is_protected_process);
}

// --gpu resolved against `snapshot` into `o`; the exit status when it names no GPU there.
std::optional<int> resolve_scope(DoctorOptions& o, const core::Snapshot& snapshot) {
  if (!o.gpu_spec) return std::nullopt;
  auto gpu = core::resolve_gpu(snapshot, *o.gpu_spec);
  // Without a driver doctor still diagnoses from /proc: only a GPU that is known not to exist
  // stops it.
  if (gpu.problem && !gpu.problem->driver_down) return fail_scope(*gpu.problem, kDoctorCannotRun);
  o.gpu = gpu.place.index;
  if (gpu.place.gpu_instance) o.instance = gpu.place;
  return std::nullopt;
}

class Doctor {
 public:
  Doctor(const GlobalOptions& g, const DoctorOptions& o, const DoctorRun& run,
         const collect::Collector& collector)
      : g_(g), o_(o), run_(run), collector_(collector) {}

  // The findings about `first` and `last` (taken --settle apart) in this command's scope.
  std::vector<doctor::Finding> diagnose(std::shared_ptr<const core::Snapshot> first,
                                        std::shared_ptr<const core::Snapshot> last) const {
    auto ipc = std::make_shared<const procfs::IpcResidue>(collector_.ipc_residue(last->proc));
    return findings_of(doctor::read_evidence(collector_, std::move(first), last, std::move(ipc)),
                       o_, run_);
  }

  // --fix: the remedies through the reap pipeline, planned on the diagnosed snapshot, so each
  // target is the process doctor saw (PID and start time), however long the diagnosis took to
  // print. The findings and the kill's plan and outcome are for the person at the terminal;
  // with --json they go to stderr and stdout carries only the final document. True when
  // something was signalled.
  bool fix(const core::Snapshot& last, const std::vector<doctor::Finding>& findings) const {
    std::ostream& log = g_.json ? std::cerr : std::cout;
    auto style = output::Style::for_stdout(g_.no_color);
    auto text = render_options(g_, o_);
    if (!g_.json)
      log << output::render_doctor(last, findings, style,
                                   {.gpu = o_.gpu,
                                    .verbose = o_.verbose,
                                    .width = text.width,
                                    .fixing = true,
                                    .unicode = text.unicode,
                                    .instance = o_.instance});
    auto request = fix_request(findings, o_);
    if (request.chosen.empty()) {
      log << "\nNothing for --fix to do: the remedies above need a person (or `gpureap reset`).\n";
      return false;
    }
    log << "\nFixing: ending the processes that keep ghost memory.\n" << std::flush;
    KillOptions kill;
    kill.yes = o_.yes;
    kill.announce_as =
        "gpureap doctor --fix" + (o_.gpu_spec ? " --gpu " + *o_.gpu_spec : std::string());
    GlobalOptions human = g_;
    human.json = false;
    reap::CollectorWorld world(collector_);
    return kill_on_snapshot(human, kill, request, world, last, std::chrono::system_clock::now(),
                            "pass --yes to apply this plan: gpureap doctor --fix --yes", log)
        .signalled;
  }

 private:
  const GlobalOptions& g_;
  const DoctorOptions& o_;
  const DoctorRun& run_;
  const collect::Collector& collector_;
};

// The daemon's evidence for a doctor without --fix (a fix signals from here, on this command's
// own view) when it may answer (cli/daemon_client.h).
std::optional<daemon::EvidenceAnswer> from_daemon(const GlobalOptions& g, const DoctorOptions& o,
                                                  const DoctorRun& run) {
  if (o.fix) return std::nullopt;
  auto path = daemon_socket(g, o.no_daemon);
  if (!path) return std::nullopt;
  return ask_daemon_evidence(*path, run.settle);
}

// The report on the daemon's evidence, rendered as the command renders its own; empty when it
// cannot answer: doctor must settle and the daemon kept no snapshot from --settle before, or a
// process it would name is another one now.
std::optional<int> report_served(const GlobalOptions& g, DoctorOptions o, const DoctorRun& run,
                                 daemon::EvidenceAnswer served) {
  doctor::Evidence& evidence = served.evidence;
  if (auto failed = resolve_scope(o, *evidence.last)) return failed;
  if (!doctor::needs_settle(*evidence.last, o.gpu))
    evidence.first = evidence.last;
  else if (!served.first_kept)
    return std::nullopt;
  // What the kernel shows of the daemon's D-state holders this command reads itself, as on its
  // own samples (the daemon reads no kernel stacks).
  evidence.blocked = collect::read_blocked_tasks(g.proc_root, g.sys_root, *evidence.last,
                                                 backend::BackendSet().kernel_functions());
  DoctorRun daemons_run = run;
  daemons_run.stalled_job_critical_after = served.stalled_job_critical_after;
  auto findings = findings_of(evidence, o, daemons_run);
  // Advice names processes as the daemon read them: each must still be that process, or this
  // command diagnoses from its own samples (collect/identity_recheck.h).
  std::vector<pid_t> named;
  for (const auto& f : findings) named.insert(named.end(), f.pids.begin(), f.pids.end());
  if (auto changed = collect::first_changed(*evidence.last, named, g.proc_root)) {
    std::cerr << "gpureap: PID " << changed->pid << " (" << text::terminal_safe(changed->comm)
              << ") has ended since the daemon's sample"
              << (changed->successor ? ", and its number is another process's now (" +
                                           text::terminal_safe(*changed->successor) + ")"
                                     : std::string())
              << "; diagnosing from this command's own samples\n";
    return std::nullopt;
  }
  auto options = render_options(g, o);
  options.daemon_age = std::chrono::milliseconds(served.snapshot_age_ms);
  auto rendered = output::render_doctor_command(*evidence.last, findings, options);
  return print_report(rendered.out, rendered.err, rendered.exit_code, o);
}

// Whether stdout and stderr are one terminal: the report then shows where the early lines are.
bool one_terminal() {
  struct stat out {
  }, err{};
  return ::isatty(STDOUT_FILENO) && ::isatty(STDERR_FILENO) && ::fstat(STDOUT_FILENO, &out) == 0 &&
         ::fstat(STDERR_FILENO, &err) == 0 && out.st_rdev == err.st_rdev;
}

// The terminal lines `text` takes, a line longer than the width taking more.
size_t screen_lines(const std::string& text, size_t width) {
  size_t lines = 0;
  for (size_t i = 0; i < text.size();) {
    size_t end = std::min(text.find('\n', i), text.size());
    size_t w = text::text_width(std::string_view(text).substr(i, end - i));
    lines += width && w > width ? (w + width - 1) / width : 1;
    i = end + 1;
  }
  return lines;
}

// Before the wait for the second sample, on a terminal: why it waits, and the problems the
// first sample shows already (those that do not depend on how memory moves), so a person is
// never left looking at nothing. Returns what it wrote.
std::string say_settling(const GlobalOptions& g, const DoctorOptions& o, const DoctorRun& run,
                         const collect::Collector& collector,
                         const std::shared_ptr<const core::Snapshot>& first) {
  std::string said = "gpureap: checking again in " + core::format_duration(run.settle) +
                     " to tell memory being released from leaked memory" +
                     (output::locale_speaks_utf8() ? "…" : "...") + "\n";
  std::cerr << said << std::flush;
  if (g.json) return said;
  // Only what the first sample holds: the kernel log and the blocked tasks are read with the
  // second.
  doctor::Evidence evidence{
      first, first, std::make_shared<const procfs::IpcResidue>(collector.ipc_residue(first->proc))};
  auto early = doctor::examine(evidence, scope(o, run, doctor::Reader::Privileged),
                               reap::is_protected_process);
  std::erase_if(early, [](const doctor::Finding& f) {
    return f.has(doctor::FindingCode::NoSuchProcess) || f.has(doctor::FindingCode::Releasing) ||
           f.has(doctor::FindingCode::LeakedMemory) ||
           f.has(doctor::FindingCode::UnattributedMemory) ||
           f.has(doctor::FindingCode::UninterruptibleHolder) ||
           f.has(doctor::FindingCode::ForeignNamespace);
  });
  auto text = render_options(g, o);
  text.width = terminal_width().value_or(0);
  std::string lines = output::render_doctor_summaries(
      early, output::Style(false), {.gpu = o.gpu, .width = text.width, .unicode = text.unicode});
  if (!lines.empty()) std::cerr << "Found so far:\n" << lines << std::flush;
  return lines.empty() ? said : said + "Found so far:\n" + lines;
}

}  // namespace

CLI::App* add_doctor_command(CLI::App& app, DoctorOptions& o) {
  auto* cmd = app.add_subcommand(
      "doctor", "explain every ghost, with evidence and the command that fixes it");
  cmd->add_option("--gpu", o.gpu_spec,
                  "only findings about this GPU (its index in `gpureap ps`; N/G or an instance's "
                  "UUID: only about processes in GPU instance G)")
      ->type_name("N");
  cmd->add_option("--settle", o.settle,
                  "time between the two samples that tell releasing from leaked (default 5s)");
  cmd->add_option(
         "--only", o.only,
         "only findings with these codes (e.g. no-such-process,leaked-memory); the exit status "
         "follows them")
      ->delimiter(',');
  cmd->add_option(
      "--unattributed-threshold", o.unattributed_threshold,
      "report memory the driver attributes to no process above this: a size, a percentage of "
      "the GPU, or both (default 1GiB,1%: the larger)");
  cmd->add_flag("--fix", o.fix,
                "apply the safe remedies through the reaper, after showing the plan");
  cmd->add_flag("-y,--yes", o.yes, "with --fix: do not ask for confirmation");
  cmd->add_flag("-v,--verbose", o.verbose,
                "also the informational findings (a running job's workers, protected services)");
  cmd->add_flag("--no-pager", o.no_pager,
                "never page the report (by default a report longer than the terminal goes "
                "through $PAGER, else less -FRX)");
  cmd->add_flag("--no-daemon", o.no_daemon,
                "diagnose from this command's own samples even when the gpureap daemon could "
                "answer");
  return cmd;
}

int run_doctor(const GlobalOptions& g, const DoctorOptions& given) {
  auto run = check_options(given);
  if (!run) {
    fail(run.error());
    return kDoctorCannotRun;
  }
  DoctorOptions o = given;
  if (o.gpu_spec) {
    // A typo is told before anything is collected; resolve_gpu says the same words later.
    auto ref = core::parse_gpu_option(*o.gpu_spec);
    if (!ref) {
      fail(ref.error());
      return kDoctorCannotRun;
    }
    if (ref->index && !ref->gpu_instance) o.gpu = ref->index;
  }
  // What the daemon saw of the driver's lists over time, for this command's own samples
  // (core/listed_sightings.h): a fix signals from them.
  std::optional<core::ListedSightings> sightings;
  if (auto served = from_daemon(g, o, *run)) {
    if (served->evidence.last) sightings = core::sightings_of(served->evidence.last->proc);
    if (auto status = report_served(g, o, *run, std::move(*served))) return *status;
  } else if (o.fix) {
    sightings = ask_daemon_sightings(g, o.no_daemon);
  }
  auto collector = open_collector(g);
  if (!collector) {
    fail(collector.error());
    return kDoctorCannotRun;
  }
  adopt_daemon_sightings(*collector, std::move(sightings));
  auto first = std::make_shared<const core::Snapshot>(collector->collect());
  if (auto failed = resolve_scope(o, *first)) return *failed;
  if (doctor::needs_settle(*first, o.gpu)) {
    std::string said;
    if (::isatty(STDERR_FILENO)) said = say_settling(g, o, *run, *collector, first);
    std::this_thread::sleep_for(run->settle);
    // The report says it all again: on one terminal the early lines give way to it (cursor up
    // over them, erase to the end of the screen).
    if (!said.empty() && one_terminal())
      std::cerr << "\x1b[" << screen_lines(said, text_width()) << "A\x1b[J" << std::flush;
  }
  auto last = std::make_shared<const core::Snapshot>(collector->collect());
  Doctor doc(g, o, *run, *collector);
  auto findings = doc.diagnose(first, last);
  if (o.fix) {
    if (doc.fix(*last, findings)) {
      last = std::make_shared<const core::Snapshot>(collector->collect());
      findings = doc.diagnose(last, last);
      if (!g.json) std::cout << "\nAfter the fix:\n";
    } else if (!g.json) {
      return output::doctor_exit_code(
          doctor::worst(findings));  // the findings are on the screen already
    }
  }
  auto options = render_options(g, o);
  options.fixing = o.fix;
  auto rendered = output::render_doctor_command(*last, findings, options);
  return print_report(rendered.out, rendered.err, rendered.exit_code, o);
}

}  // namespace gpureap::cli
