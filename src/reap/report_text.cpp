#include "reap/report_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "output/ps_view.h"
#include "output/table.h"
#include "reap/arguments.h"
#include "text/byte_format.h"
#include "text/escape.h"

namespace gpureap::reap {
namespace {

using output::Cell;
using output::Color;

std::string duration_text(std::chrono::milliseconds d) {
  auto ms = d.count();
  if (ms < 1000) return fmt::format("{} ms", ms);
  if (ms < 60'000) return fmt::format("{:.1f} s", static_cast<double>(ms) / 1000.0);
  return fmt::format("{:.1f} min", static_cast<double>(ms) / 60'000.0);
}

std::string memory_text(const Target& t) {
  if (t.gpus.empty()) return "-";
  std::string s;
  for (const auto& u : t.gpus)
    s += (s.empty() ? "" : ", ") +
         fmt::format("GPU{} {}", u.index, u.used_bytes ? text::human_bytes(*u.used_bytes) : "?");
  return s;
}

std::string command_text(const Target& t) {
  if (t.cmdline.empty()) return "[" + text::terminal_safe(t.comm) + "]";
  std::string s;
  for (const auto& a : t.cmdline) s += (s.empty() ? "" : " ") + a;
  return text::terminal_safe(s);
}

std::string reasons_text(const Target& t) {
  std::string s;
  for (const auto& r : t.reasons) {
    // "inherited holder of gone PID N" already says what the ghost anomaly would.
    if (r.kind == ReasonKind::Ghost && r.anomaly == core::Anomaly::InheritedHolder &&
        t.has(ReasonKind::InheritedHolder))
      continue;
    s += (s.empty() ? "" : "; ") + describe(r);
  }
  return s;
}

Cell action_cell(const Target& t) {
  switch (t.action) {
    case Action::Signal:
      return {"kill"};
    case Action::Refused:
      return {"refused", Color::Yellow};
    case Action::NotPermitted:
      return {"not permitted", Color::Yellow};
    case Action::Zombie:
      return {"zombie", Color::Yellow};
  }
  return {"?"};
}

// The plan's first line: what was chosen, in words, and what will be done to it.
std::string plan_header(const Plan& plan, const KillSettings& k, const output::Style& style) {
  std::string chosen = style.paint(text::terminal_safe(plan.selection), Color::Bold);
  size_t n = plan.targets.size(), to_signal = plan.count(Action::Signal);
  if (n == 0) return chosen + ": nothing matched.\n";
  std::string how = signal_name(k.exec.signal);
  if (k.exec.escalate && k.exec.signal != SIGKILL)
    how += ", then SIGKILL after " + duration_text(k.exec.grace);
  else
    how += ", wait " + duration_text(k.exec.grace);
  std::string verify =
      plan.backend_available
          ? "wait up to " + duration_text(k.verify.wait_release) + " for the memory"
          : "no GPU driver: check that no device file stays held";
  std::string count = fmt::format("{} process{}", n, n == 1 ? "" : "es");
  if (to_signal != n) count += fmt::format(", {}", to_signal);
  return fmt::format("{}: {} to signal ({}; {}).\n", chosen, count, how, verify);
}

Cell outcome_cell(const Outcome& o) {
  switch (o.kind) {
    case OutcomeKind::Released:
      return {"released", Color::Green};
    case OutcomeKind::StillHeld:
      return {"still-held", Color::Red};
    case OutcomeKind::Survived:
      return {"survived", Color::Red};
    case OutcomeKind::NotPermitted:
      return {"not-permitted", Color::Yellow};
    case OutcomeKind::Refused:
      return {"refused", Color::Yellow};
  }
  return {"?"};
}

std::string outcome_detail(const Outcome& o) {
  std::string s;
  if (o.kind == OutcomeKind::Released || o.kind == OutcomeKind::StillHeld) {
    s = o.exited_after ? "exited on " + signal_name(*o.exited_after)
                       : "exited before it was signalled";
    if (o.released_bytes && *o.released_bytes > 0)
      s += "; " + text::human_bytes(*o.released_bytes) + " released" +
           (o.release_ms ? fmt::format(" {} ms after", *o.release_ms) : std::string());
  }
  if (!o.why.empty()) s += (s.empty() ? "" : "; ") + o.why;
  return text::terminal_safe(s);
}

}  // namespace

std::string render_plan(const core::Snapshot& s, const Plan& plan, const KillSettings& k,
                        const output::Style& style, std::optional<size_t> width) {
  std::string out = plan_header(plan, k, style);
  if (!plan.targets.empty()) {
    output::Table table({"PID", "USER", "STATE", "MEMORY", "ACTION", "WHY", "COMMAND"});
    for (const auto& t : plan.targets) {
      std::string why = reasons_text(t);
      if (!t.refusal.empty()) why += " — " + t.refusal;
      table.add({{std::to_string(t.pid)},
                 {t.user  ? text::terminal_safe(*t.user)
                  : t.uid ? std::to_string(*t.uid)
                          : "?"},
                 {output::state_word(t.state)},
                 {memory_text(t)},
                 action_cell(t),
                 {text::terminal_safe(why)},
                 {command_text(t)}});
    }
    out += table.render(style, width);
  }
  for (const auto& g : plan.gone) {
    std::string keepers;
    for (pid_t k2 : g.keepers) keepers += (keepers.empty() ? "" : ", ") + std::to_string(k2);
    auto bytes = g.memory_bytes();
    out += fmt::format("Gone PID {}{} holds {} through {}.\n", g.pid,
                       g.driver_name ? " (" + text::terminal_safe(*g.driver_name) + ")" : "",
                       bytes ? text::human_bytes(*bytes) : "unknown memory",
                       keepers.empty() ? "no process in the plan" : "its keepers " + keepers);
  }
  for (const auto& n : plan.notes)
    out += style.paint("note: ", Color::Yellow) + text::terminal_safe(n) + "\n";
  if (!s.complete())
    out += style.paint("note: ", Color::Yellow) +
           fmt::format(
               "the view is incomplete ({} processes could not be inspected): holders may be "
               "missing from this plan; run as root or grant CAP_SYS_PTRACE\n",
               s.proc.uninspectable);
  return out;
}

std::string render_results(const Plan& plan, const Report& r, const output::Style& style,
                           std::optional<size_t> width) {
  std::string out;
  output::Table table({"PID", "OUTCOME", "DETAIL"});
  for (const auto& o : r.outcomes)
    table.add({{std::to_string(o.pid)}, outcome_cell(o), {outcome_detail(o)}});
  out += table.render(style, width);
  for (const auto& g : r.gone) {
    if (!g.attempted) continue;
    out += g.released
               ? fmt::format("Gone PID {}: {} released{}.\n", g.pid,
                             g.bytes ? text::human_bytes(*g.bytes) : "memory",
                             g.release_ms
                                 ? fmt::format(" {} ms after its last keeper exited", *g.release_ms)
                                 : "")
               : fmt::format("Gone PID {}: memory still held.\n", g.pid);
  }
  std::string freed;
  for (const auto& f : r.freed)
    if (f.bytes > 0)
      freed += (freed.empty() ? "" : ", ") +
               fmt::format("GPU {} {}", f.index, text::human_bytes(f.bytes));
  auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(r.timing.report - r.timing.started);
  if (!plan.backend_available)
    out += fmt::format(
        "No GPU driver to ask: checked that no target still holds a device file. Took {}.\n",
        duration_text(took));
  else
    out += fmt::format("Freed {} in {}.\n", freed.empty() ? "no listed GPU memory" : freed,
                       duration_text(took));
  if (r.exit_code != kExitReleased)
    out += style.paint("Not everything was reclaimed: ", Color::Red) +
           "`gpureap ps` shows what still holds GPU memory.\n";
  return out;
}

}  // namespace gpureap::reap
