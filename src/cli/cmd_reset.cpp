// `gpureap reset`: the last resort, guarded. It refuses while anything uses the GPU, lets go
// of gpureap's own driver handles (an open handle blocks the reset), runs the reset tool of the
// GPU's backend (its registry entry's ResetTool), and checks that the memory came back.
#include "cli/cmd_reset.h"

#include <unistd.h>

#include <iostream>

#include "backend/registry.h"
#include "cli/announce.h"
#include "cli/confirm.h"
#include "cli/external_command.h"
#include "core/gpu_resolve.h"
#include "doctor/reset_guard.h"
#include "doctor/reset_remedy.h"
#include "output/view_incomplete.h"
#include "text/byte_format.h"
#include "text/escape.h"

namespace gpureap::cli {
namespace {

std::optional<uint64_t> used_bytes(const core::Snapshot& s, unsigned gpu) {
  const auto* g = s.gpu(gpu);
  return g ? g->memory.used_bytes : std::nullopt;
}

std::string bytes_or_unknown(std::optional<uint64_t> b) {
  return b ? text::human_bytes(*b) : std::string("unknown");
}

// The entry whose tool resets this GPU: its backend's; for a GPU no backend reports, the first
// entry that has one.
const backend::BackendEntry* reset_entry(const core::Gpu* gpu) {
  if (gpu) return backend::find_backend(gpu->backend);
  for (const auto& e : backend::builtin_backends())
    if (e.reset) return &e;
  return nullptr;
}

// "<Vendor> GPUs only (through <tool>)": the vendors whose GPUs gpureap resets, and how.
std::string resettable() {
  std::string vendors, tools;
  for (const auto& e : backend::builtin_backends())
    if (e.reset) {
      vendors += (vendors.empty() ? "" : ", ") + e.words.vendor;
      tools += (tools.empty() ? "" : ", ") + e.reset->program;
    }
  return vendors + " GPUs only (through " + tools + ")";
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

CLI::App* add_reset_command(CLI::App& app, ResetOptions& o) {
  auto* cmd = app.add_subcommand(
      "reset", "reset a GPU whose memory nothing alive holds (last resort; root)");
  cmd->add_option("--gpu", o.gpu, "the GPU to reset (its index in `gpureap ps`)")->required();
  cmd->add_flag("-y,--yes", o.yes, "do not ask for confirmation");
  cmd->add_flag("--dry-run", o.dry_run, "check and show what would run, change nothing");
  return cmd;
}

namespace {

// Whether GPU `gpu` may be reset: nothing alive holds it or is listed on it, and the view is
// complete. The collector, and with it gpureap's own driver handles, is closed on return.
struct Guarded {
  std::optional<int> refused;  // the exit status, when it may not
  std::optional<uint64_t> used_before;
  unsigned backend_index = 0;  // the reset tool's numbering of the GPU
  const backend::BackendEntry* entry = nullptr;
};

// `again`: the check repeated right before the reset, which says only what changed its answer.
Guarded guard_reset(const GlobalOptions& g, const ResetOptions& o, bool again) {
  auto collector = open_collector(g);
  if (!collector) return Guarded{fail(collector.error())};
  auto snapshot = collector->collect();
  if (report_driver_timeout(snapshot)) {
    std::cerr << "gpureap: not resetting GPU " << o.gpu
              << ": a driver that does not answer cannot tell what "
              << "uses it (and its reset would hang too); check dmesg, then reboot\n";
    return Guarded{kExitDriverTimeout};
  }
  if (auto unknown = core::resolve_gpu(snapshot, std::to_string(o.gpu)).problem)
    return Guarded{fail_scope(*unknown)};
  // From inside a child PID namespace (a container) the processes outside it are out of sight:
  // a PID the driver lists may be alive there, and a holder there is in no /proc gpureap reads.
  if (snapshot.proc.in_child_pid_namespace)
    return Guarded{fail({"gpureap cannot prove that nothing uses GPU " + std::to_string(o.gpu) +
                             ": it runs in a child PID namespace (a container), and processes "
                             "outside it are out of its sight",
                         "run the reset from the host's PID namespace"})};
  auto blockers = doctor::reset_blockers(snapshot, o.gpu);
  if (!blockers) return Guarded{fail(blockers.error())};
  // Before anything else: on a split GPU a reset ends the work on every instance, not one.
  auto split = doctor::split_reset_lines(snapshot, o.gpu);
  std::ostream& split_out = blockers->empty() ? std::cout : std::cerr;
  if (again && blockers->empty()) split.clear();  // said before the question
  for (size_t i = 0; i < split.size(); ++i)
    split_out << (i == 0 && !blockers->empty() ? "gpureap: " : "") << split[i] << "\n";
  if (!blockers->empty()) {
    auto lines = doctor::reset_refusal(snapshot, o.gpu, *blockers);
    std::cerr << "gpureap: " << lines.front() << "\n";
    for (size_t i = 1; i < lines.size(); ++i) std::cerr << lines[i] << "\n";
    return Guarded{kExitFailed};
  }
  if (!snapshot.complete())
    return Guarded{fail({"gpureap cannot prove that nothing uses GPU " + std::to_string(o.gpu) +
                             ": " + output::incomplete_reason(snapshot),
                         ""})};
  const core::Gpu* gpu = snapshot.gpu(o.gpu);
  const backend::BackendEntry* entry = reset_entry(gpu);
  if (!entry || !entry->reset)
    return Guarded{fail(
        {"GPU " + std::to_string(o.gpu) + " is " + (gpu ? gpu->vendor : std::string("no backend")) +
             "'s; gpureap resets " + resettable(),
         "nothing holds it now; reset it with: " + doctor::reset_command(snapshot, o.gpu)})};
  return Guarded{std::nullopt, used_bytes(snapshot, o.gpu), gpu ? gpu->backend_index : o.gpu,
                 entry};
}

}  // namespace

int run_reset(const GlobalOptions& g, const ResetOptions& o) {
  auto guarded = guard_reset(g, o, false);
  if (guarded.refused) return *guarded.refused;
  const backend::BackendEntry* first_entry = guarded.entry;
  const backend::ResetTool& tool = *guarded.entry->reset;
  auto command_for = [&tool](const Guarded& checked) {
    std::vector<std::string> out{tool.program};
    for (auto& arg : tool.arguments(checked.backend_index)) out.push_back(std::move(arg));
    return out;
  };
  auto command = command_for(guarded);
  const bool tool_found = !find_on_path(tool.program).empty();
  // A dry run runs nothing: it says what would run, and where the tool is missing, that too.
  if (!tool_found && !o.dry_run)
    return fail({tool.program + " was not found on PATH", tool.missing_hint});
  std::cout << "GPU " << o.gpu << " uses " << bytes_or_unknown(guarded.used_before)
            << " and nothing holds it. " << (o.dry_run ? "Would run: " : "Will run: ")
            << joined(command) << "\n";
  if (o.dry_run) {
    if (!tool_found)
      std::cout << tool.program << " is not on PATH here; " << tool.missing_hint << "\n";
    return kExitOk;
  }
  if (::geteuid() != 0)
    return fail(
        {"a GPU reset needs root", "run `sudo gpureap reset --gpu " + std::to_string(o.gpu) + "`"});
  auto go = confirm("Reset GPU " + std::to_string(o.gpu) + "?", o.yes);
  if (!go) return fail(go.error());
  if (!*go) {
    std::cout << "Nothing done.\n";
    return kExitFailed;
  }
  // The answer may come long after the check, and whatever opened the GPU meanwhile would lose
  // its work: the check is made again right before the reset, and its answer decides.
  guarded = guard_reset(g, o, true);
  if (guarded.refused) return *guarded.refused;
  if (guarded.entry != first_entry)
    return fail({"GPU " + std::to_string(o.gpu) + " changed while gpureap asked",
                 "check `gpureap ps`, then run the reset again"});
  command = command_for(guarded);
  auto before = guarded.used_before;
  // The daemon hears of it first: its audit log and the report then say who reset the GPU.
  daemon::AnnounceRequest announced;
  announced.by = "gpureap reset --gpu " + std::to_string(o.gpu);
  announced.signal = "reset";
  announced.reason = "nothing holds GPU " + std::to_string(o.gpu) + "; " + joined(command);
  announced.gpu = o.gpu;
  announce(announced);
  auto ran = run_command(command);
  if (!ran) return fail(ran.error());
  if (ran->exit_code != 0) {
    std::cerr << "gpureap: " << joined(command) << " failed (exit " << ran->exit_code << "):\n"
              << text::terminal_safe(ran->output) << "\n  "
              << (tool.failure_hint ? tool.failure_hint(ran->output, o.gpu)
                                    : std::string("reboot if nothing else helps"))
              << "\n";
    return kExitFailed;
  }
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  auto after = used_bytes(collector->collect(), o.gpu);
  std::cout << "GPU " << o.gpu << " reset: used memory " << bytes_or_unknown(before) << " → "
            << bytes_or_unknown(after) << ".\n";
  if (before && after && *after >= *before && *before > 0) {
    std::cerr << "gpureap: the reset ran but the memory did not come back; reboot\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace gpureap::cli
