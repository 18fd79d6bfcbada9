#include "output/kill_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/gpu_place.h"
#include "output/command_label.h"
#include "output/ps_view.h"
#include "output/table.h"
#include "output/view_incomplete.h"
#include "reap/arguments.h"
#include "text/byte_format.h"
#include "text/escape.h"

namespace gpureap::output {
// The helpers of this file, in a namespace of their own (the output module is one unit).
namespace kill_view {

using namespace reap;

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
         fmt::format("GPU{} {}", core::gpu_place_text(u.index, u.gpu_instance_id),
                     u.used_bytes ? text::human_bytes(*u.used_bytes) : "?");
  return s;
}

// Text wrapped at the width, its first `bold` bytes painted (what was chosen), or all of it in
// `color` after a painted `label` ("note: ").
std::string lines(const std::string& text, std::optional<size_t> width) {
  return output::wrap_text(text, width);
}

std::string labelled(const output::Style& style, const std::string& label, Color color,
                     const std::string& text, std::optional<size_t> width) {
  std::string wrapped = lines(label + text, width);
  return style.paint(wrapped.substr(0, label.size() - 1), color) + wrapped.substr(label.size() - 1);
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
std::string plan_header(const Plan& plan, const KillSettings& k, const output::Style& style,
                        std::optional<size_t> width) {
  std::string chosen = text::terminal_safe(plan.selection);
  size_t n = plan.targets.size(), to_signal = plan.count(Action::Signal);
  if (n == 0) return labelled(style, chosen + ":", Color::Bold, " nothing matched.", width);
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
  return labelled(style, chosen + ":", Color::Bold,
                  fmt::format(" {} to signal ({}; {}).", count, how, verify), width);
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

// A typed number that is a thread: what it is and what to type instead, its "TID N" painted as a
// header's words are. It stands in the header's place: first, and never as "nothing matched".
std::string thread_line(const NamedThread& t, const output::Style& style,
                        std::optional<size_t> width) {
  const std::string said = text::terminal_safe(describe(t));
  const std::string tid = "TID " + std::to_string(t.tid) + " ";
  return labelled(style, tid, Color::Bold, said.substr(tid.size()), width);
}

std::string plan_text(const core::Snapshot& s, const Plan& plan, const KillSettings& k,
                      const output::Style& style, std::optional<size_t> width) {
  std::string out;
  for (const auto& t : plan.threads) out += thread_line(t, style, width);
  // Nothing but threads asked for: they are all there is to say of the request.
  if (!plan.selection.empty()) out += plan_header(plan, k, style, width);
  if (!plan.targets.empty()) {
    output::Table table({"PID", "USER", "STATE", "MEMORY", "ACTION", "WHY", "COMMAND"});
    // Nobody confirms a kill on a PID and a user alone: the command keeps its column at any
    // width, the reasons moving to a line under each target first.
    table.drop_when_narrow({}, 28);
    table.shrink_when_narrow("USER", 8);
    table.fold_when_narrow("WHY", "why");
    table.shrink_when_narrow("MEMORY", 12);
    table.shrink_when_narrow("STATE", 7);
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
                 {output::command_label(t.cmdline, t.comm)}});
    }
    out += table.render(style, width);
  }
  for (const auto& g : plan.gone) {
    std::string keepers;
    for (pid_t k2 : g.keepers) keepers += (keepers.empty() ? "" : ", ") + std::to_string(k2);
    auto bytes = g.memory_bytes();
    out += lines(fmt::format("Gone PID {}{} holds {} through {}.", g.pid,
                             g.driver_name ? " (" + text::terminal_safe(*g.driver_name) + ")" : "",
                             bytes ? text::human_bytes(*bytes) : "unknown memory",
                             keepers.empty() ? "no process in the plan" : "its keepers " + keepers),
                 width);
  }
  for (const auto& n : plan.notes)
    out += labelled(style, "note: ", Color::Yellow, text::terminal_safe(n), width);
  if (!s.complete())
    out += labelled(style, "note: ", Color::Yellow,
                    "the view is incomplete, and holders may be missing from this plan: " +
                        text::terminal_safe(incomplete_reason(s)),
                    width);
  return out;
}

std::string results_text(const Plan& plan, const Report& r, const output::Style& style,
                         std::optional<size_t> width) {
  std::string out;
  output::Table table({"PID", "OUTCOME", "DETAIL"});
  for (const auto& o : r.outcomes)
    table.add({{std::to_string(o.pid)}, outcome_cell(o), {outcome_detail(o)}});
  out += table.render(style, width);
  for (const auto& g : r.gone) {
    if (!g.attempted) continue;
    out += lines(g.released
                     ? fmt::format("Gone PID {}: {} released{}.", g.pid,
                                   g.bytes ? text::human_bytes(*g.bytes) : "memory",
                                   g.release_ms ? fmt::format(" {} ms after its last keeper exited",
                                                              *g.release_ms)
                                                : "")
                     : fmt::format("Gone PID {}: memory still held.", g.pid),
                 width);
  }
  std::string freed;
  for (const auto& f : r.freed)
    if (f.bytes > 0)
      freed += (freed.empty() ? "" : ", ") +
               fmt::format("GPU {} {}", f.index, text::human_bytes(f.bytes));
  // From the first signal to the release seen: not the time spent planning or answering.
  auto took = reclaim_time(r.timing);
  if (!plan.backend_available)
    out += lines(fmt::format("No GPU driver to ask: checked that no target still holds a device "
                             "file. Took {}.",
                             duration_text(took)),
                 width);
  else
    out += lines(fmt::format("Freed {} in {}.", freed.empty() ? "no listed GPU memory" : freed,
                             duration_text(took)),
                 width);
  if (r.exit_code != kExitReleased)
    out += labelled(style, "Not everything was reclaimed: ", Color::Red,
                    "`gpureap ps` shows what still holds GPU memory.", width);
  return out;
}

}  // namespace kill_view

std::string render_plan(const core::Snapshot& snapshot, const reap::Plan& plan,
                        const reap::KillSettings& settings, const Style& style,
                        std::optional<size_t> width) {
  return kill_view::plan_text(snapshot, plan, settings, style, width);
}

std::string render_results(const reap::Plan& plan, const reap::Report& report, const Style& style,
                           std::optional<size_t> width) {
  return kill_view::results_text(plan, report, style, width);
}

}  // namespace gpureap::output
