#include "cli/cmd_doctor.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/cmd_kill.h"
#include "core/duration.h"
#include "doctor/diagnose.h"
#include "output/doctor_view.h"
#include "output/snapshot_json.h"
#include "reap/arguments.h"
#include "reap/safety.h"

namespace gpureap::cli {
namespace {

constexpr int kDoctorCannotRun = 3;

int exit_code(doctor::Severity worst) {
  return worst == doctor::Severity::Critical ? 2 : worst == doctor::Severity::Warning ? 1 : 0;
}

// A second sample only tells something when memory may still be moving: gone PIDs listed,
// memory attributed to nobody, or a holder stuck in D state. Otherwise it is taken at once.
// With --gpu, only that GPU's memory counts (a D-state holder the driver lists nowhere may be
// holding any GPU).
bool needs_settle(const core::Snapshot& s, std::optional<unsigned> gpu) {
  auto concerns = [&](const core::ProcessRow& r) {
    return !gpu || r.gpus.empty() ||
           std::any_of(r.gpus.begin(), r.gpus.end(),
                       [&](const core::GpuUse& u) { return u.index == *gpu; });
  };
  for (const auto& r : s.rows)
    if ((!r.process || r.has(core::Anomaly::Uninterruptible)) && concerns(r)) return true;
  for (const auto& g : s.backend.gpus)
    if ((!gpu || g.index == *gpu) && s.memory_summary(g).unattributed_bytes.value_or(0) > 0)
      return true;
  return false;
}

// The processes whose ending is the safe remedy, each with the reason doctor chose it: the
// keepers of ghost memory, leftovers of dead jobs and stopped holders (the reaper sends stopped
// ones SIGCONT after SIGTERM). A gone PID is passed as it is: the reaper resolves it to its
// keepers. None is "named", so the reaper's protected list and its other rules still apply.
std::vector<reap::Chosen> fix_choices(const std::vector<doctor::Finding>& findings) {
  std::vector<reap::Chosen> out;
  auto add = [&](pid_t pid, reap::ReasonKind kind, std::optional<core::Anomaly> a) {
    bool seen =
        std::any_of(out.begin(), out.end(), [&](const reap::Chosen& c) { return c.pid == pid; });
    if (!seen) out.push_back({pid, kind, a});
  };
  for (const auto& f : findings) {
    if (f.pids.empty()) continue;
    if (f.code == "no-such-process" && f.severity == doctor::Severity::Critical)
      add(f.pids.front(), reap::ReasonKind::Ghost, core::Anomaly::NoSuchProcess);
    else if (f.code == "orphan-holder")
      add(f.pids.front(), reap::ReasonKind::Ghost, core::Anomaly::Orphan);
    else if (f.code == "stopped-holder")
      add(f.pids.front(), reap::ReasonKind::Ghost, core::Anomaly::Stopped);
    else if (f.code == "inherited-holder" && f.severity != doctor::Severity::Info)
      add(f.pids.front(), reap::ReasonKind::Ghost, core::Anomaly::InheritedHolder);
  }
  std::sort(out.begin(), out.end(),
            [](const reap::Chosen& a, const reap::Chosen& b) { return a.pid < b.pid; });
  return out;
}

// --only: every name must be a finding code, so a typo cannot silently report "healthy".
std::optional<core::Error> check_codes(const std::vector<std::string>& only) {
  const auto& codes = doctor::finding_codes();
  for (const auto& c : only) {
    if (std::find(codes.begin(), codes.end(), c) != codes.end()) continue;
    std::string known;
    for (auto k : codes) known += (known.empty() ? "" : ", ") + std::string(k);
    return core::Error{"--only: unknown finding code \"" + c + "\"", "codes: " + known};
  }
  return std::nullopt;
}

void keep_only(std::vector<doctor::Finding>& findings, const std::vector<std::string>& only) {
  if (only.empty()) return;
  std::erase_if(findings, [&](const doctor::Finding& f) {
    return std::find(only.begin(), only.end(), f.code) == only.end();
  });
}

}  // namespace

CLI::App* add_doctor_command(CLI::App& app, DoctorOptions& o) {
  auto* cmd = app.add_subcommand(
      "doctor", "explain every ghost, with evidence and the command that fixes it");
  cmd->add_option("--gpu", o.gpu, "only findings about this GPU (NVML index)");
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
  return cmd;
}

int run_doctor(const GlobalOptions& g, const DoctorOptions& o) {
  auto settle = core::parse_duration(o.settle);
  if (!settle) {
    fail(settle.error());
    return kDoctorCannotRun;
  }
  if (auto bad = check_codes(o.only)) {
    fail(*bad);
    return kDoctorCannotRun;
  }
  doctor::UnattributedThreshold threshold;
  if (o.unattributed_threshold) {
    auto t = doctor::parse_unattributed_threshold(*o.unattributed_threshold);
    if (!t) {
      fail({"--unattributed-threshold: " + t.error().message, t.error().hint});
      return kDoctorCannotRun;
    }
    threshold = *t;
  }
  auto collector = open_collector(g);
  if (!collector) {
    fail(collector.error());
    return kDoctorCannotRun;
  }
  auto first = collector->collect();
  if (o.gpu && first.backend.available && !first.gpu(*o.gpu)) {
    fail({"GPU " + std::to_string(*o.gpu) + " does not exist",
          "the driver reports " + std::to_string(first.backend.gpus.size()) +
              " GPU(s); see `gpureap ps` for their indices"});
    return kDoctorCannotRun;
  }
  if (needs_settle(first, o.gpu)) std::this_thread::sleep_for(*settle);
  auto last = collector->collect();

  auto is_protected = [](const core::HostProcess& p) { return reap::is_protected(p); };
  auto diagnose = [&](const core::Snapshot& a, const core::Snapshot& b) {
    auto found =
        doctor::diagnose({a, b, collector->ipc_residue(b.proc), o.gpu, is_protected, threshold});
    keep_only(found, o.only);
    return found;
  };
  auto findings = diagnose(first, last);
  auto style = output::Style::for_stdout(g.no_color);
  if (o.fix) {
    auto choices = fix_choices(findings);
    // The findings and the kill's plan and outcome are for the person at the terminal; with
    // --json they go to stderr and stdout carries only the final document.
    std::ostream& log = g.json ? std::cerr : std::cout;
    if (!g.json) log << output::render_doctor(last, findings, style, o.gpu);
    bool fixed = false;
    if (choices.empty()) {
      log << "\nNothing for --fix to do: the remedies above need a person (or `gpureap reset`).\n";
    } else {
      log << "\nFixing: ending the processes that keep ghost memory or hold the GPU stopped.\n"
          << std::flush;
      KillOptions kill;
      kill.yes = o.yes;
      reap::Request request;
      request.chosen = choices;
      GlobalOptions human = g;
      human.json = false;
      auto* saved = std::cout.rdbuf();
      if (g.json) std::cout.rdbuf(std::cerr.rdbuf());
      // Planned on the diagnosed snapshot: each target is the process doctor saw (PID and
      // start time), however long the diagnosis took to print.
      auto run =
          kill_on_snapshot(human, kill, request, *collector, last, std::chrono::system_clock::now(),
                           "pass --yes to apply this plan: gpureap doctor --fix --yes");
      std::cout.rdbuf(saved);
      fixed = run.signalled;
    }
    if (fixed) {
      first = collector->collect();
      last = first;
      findings = diagnose(first, last);
      if (!g.json) log << "\nAfter the fix:\n";
    } else if (!g.json) {
      return exit_code(doctor::worst(findings));  // the findings are on the screen already
    }
  }
  if (g.json) {
    std::cout << output::dump_json(output::doctor_to_json(last, findings)) << "\n";
  } else {
    std::cout << output::render_doctor(last, findings, style, o.gpu);
  }
  std::cout << std::flush;
  if (report_driver_timeout(last)) return kExitDriverTimeout;
  return exit_code(doctor::worst(findings));
}

}  // namespace gpureap::cli
