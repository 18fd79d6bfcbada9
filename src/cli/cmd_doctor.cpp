#include "cli/cmd_doctor.h"

#include <algorithm>
#include <iostream>
#include <thread>

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
bool needs_settle(const core::Snapshot& s) {
  for (const auto& r : s.rows)
    if (!r.process || r.has(core::Anomaly::Uninterruptible)) return true;
  for (const auto& g : s.backend.gpus)
    if (s.memory_summary(g).unattributed_bytes.value_or(0) > 0) return true;
  return false;
}

}  // namespace

CLI::App* add_doctor_command(CLI::App& app, DoctorOptions& o) {
  auto* cmd = app.add_subcommand("doctor", "explain every ghost, with evidence and the command that fixes it");
  cmd->add_option("--gpu", o.gpu, "only findings about this GPU (NVML index)");
  cmd->add_option("--settle", o.settle, "time between the two samples that tell releasing from leaked (default 5s)");
  cmd->add_flag("--fix", o.fix, "apply the safe remedies through the reaper, after showing the plan");
  cmd->add_flag("-y,--yes", o.yes, "with --fix: do not ask for confirmation");
  return cmd;
}

int run_doctor(const GlobalOptions& g, const DoctorOptions& o) {
  auto settle = reap::parse_duration(o.settle);
  if (!settle) {
    fail(settle.error());
    return kDoctorCannotRun;
  }
  auto collector = open_collector(g);
  if (!collector) {
    fail(collector.error());
    return kDoctorCannotRun;
  }
  auto first = collector->collect();
  if (needs_settle(first)) std::this_thread::sleep_for(*settle);
  auto last = collector->collect();

  std::vector<pid_t> live;
  for (const auto& p : last.proc.processes) live.push_back(p.stat.pid);
  doctor::DoctorInput input{first, last,
                            procfs::find_ipc_residue(collector->procfs(), g.dev_root, live), o.gpu,
                            [](const core::HostProcess& p) {
                              return reap::is_protected(p.stat.comm, p.details ? p.details->cmdline
                                                                               : std::vector<std::string>{});
                            }};
  auto findings = doctor::diagnose(input);
  if (g.json) {
    std::cout << output::dump_json(output::doctor_to_json(last, findings)) << "\n";
  } else {
    std::cout << output::render_doctor(last, findings, output::Style::for_stdout(g.no_color));
  }
  return exit_code(doctor::worst(findings));
}

}  // namespace gpureap::cli
