#include "output/audit_view.h"

#include <algorithm>

#include "output/table.h"
#include "text/byte_format.h"
#include "text/display_width.h"
#include "text/escape.h"
#include "text/time_format.h"

namespace gpureap::output {
namespace {

std::string or_dash(const std::string& s) {
  return s.empty() ? "-" : text::terminal_safe(s);
}

// "2026-11-30 07:53:57": seconds are enough to read; the JSON keeps the milliseconds.
std::string table_time(std::chrono::system_clock::time_point t) {
  std::string iso = text::iso8601_utc(t);
  return iso.substr(0, 10) + " " + iso.substr(11, 8);
}

Color outcome_color(const std::string& outcome) {
  if (outcome == "released") return Color::Green;
  if (outcome.rfind("would-", 0) == 0) return Color::Yellow;
  if (outcome == "failed" || outcome == "survived" || outcome == "still-held" ||
      outcome == "not-permitted" || outcome == "dropped")
    return Color::Red;
  return Color::None;
}

std::string user_of(const audit::ProcessIdentity& p) {
  if (p.user) return text::terminal_safe(*p.user);
  if (p.uid) return std::to_string(*p.uid);
  return "-";
}

std::string command_of(const audit::Record& r) {
  // The writer's note of records it had to drop has no process: its detail is the news.
  if (r.event == "records-dropped") return text::terminal_safe(r.detail);
  const auto& p = r.process;
  if (p.cmdline.empty()) return p.comm.empty() ? "-" : "(" + text::terminal_safe(p.comm) + ")";
  std::string out;
  for (const auto& arg : p.cmdline) out += (out.empty() ? "" : " ") + text::terminal_safe(arg);
  return out;
}

// Who asked: a policy by name, or a gpureap command and the user the daemon read from its
// socket's peer credentials ("gpureap kill 4242 (root)").
std::string source_of(const audit::Record& r) {
  if (r.actor)
    return text::terminal_safe(r.actor->command) + " (" + text::terminal_safe(r.actor->user) + ")";
  return or_dash(r.policy);
}

// "signalled PID 4250 (python, user alice) SIGTERM, SIGKILL; PID 4251 (python) SIGTERM": whom
// the action reached, which for a gone PID is not the row's process but its keepers.
std::string signalled_of(const audit::Record& r) {
  std::string out;
  for (const auto& s : r.signalled) {
    std::string signals;
    for (const auto& name : s.signals)
      signals += (signals.empty() ? "" : ", ") + text::terminal_safe(name);
    out += (out.empty() ? "signalled " : "; ") + audit::describe(s) + " " + signals;
  }
  return out;
}

std::string memory_of(const std::vector<audit::GpuMemory>& memory) {
  std::optional<uint64_t> sum;
  for (const auto& m : memory)
    if (m.bytes) sum = sum.value_or(0) + *m.bytes;
  return sum ? text::human_bytes(*sum) : "-";
}

}  // namespace

std::string render_audit_table(const std::vector<audit::Record>& records, const Style& style,
                               std::optional<size_t> max_width) {
  // The rows alone decide whether the wide table fits: a note under a row wraps at the edge.
  auto wide_table = [&](bool notes) {
    Table wide(
        {"TIME (UTC)", "BY", "ACTION", "OUTCOME", "PID", "USER", "MEMORY", "RELEASED", "COMMAND"});
    for (const auto& r : records) {
      wide.add({{table_time(r.time)},
                {source_of(r)},
                {or_dash(r.action)},
                {or_dash(r.outcome), outcome_color(r.outcome)},
                {r.process.pid > 0 ? std::to_string(r.process.pid) : "-"},
                {user_of(r.process)},
                {memory_of(r.memory)},
                {r.released_bytes ? text::human_bytes(*r.released_bytes) : "-"},
                {command_of(r)}});
      if (notes && !r.signalled.empty()) wide.add_note(1, {signalled_of(r)});
    }
    return wide;
  };
  if (!max_width) return wide_table(true).render(style, max_width);
  const std::string plain = wide_table(false).render(Style(false), std::nullopt);
  size_t widest = 0;
  for (size_t i = 0; i < plain.size();) {
    size_t end = std::min(plain.find('\n', i), plain.size());
    widest = std::max(widest, text::text_width(std::string_view(plain).substr(i, end - i)));
    i = end + 1;
  }
  if (widest <= *max_width) return wide_table(true).render(style, max_width);
  // Narrow: who asked, the action and the user go to a line under each row, so the memory,
  // what came back and the command keep their columns.
  Table narrow({"TIME (UTC)", "OUTCOME", "PID", "MEMORY", "RELEASED", "COMMAND"});
  for (const auto& r : records) {
    narrow.add({{table_time(r.time)},
                {or_dash(r.outcome), outcome_color(r.outcome)},
                {r.process.pid > 0 ? std::to_string(r.process.pid) : "-"},
                {memory_of(r.memory)},
                {r.released_bytes ? text::human_bytes(*r.released_bytes) : "-"},
                {command_of(r)}});
    narrow.add_note(1, {"by " + source_of(r) + ", action " + or_dash(r.action) + ", user " +
                        user_of(r.process)});
    if (!r.signalled.empty()) narrow.add_note(1, {signalled_of(r)});
  }
  return narrow.render(style, max_width);
}

nlohmann::json audit_to_json(const std::vector<audit::Record>& records, size_t malformed_lines) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : records) list.push_back(audit::to_json(r));
  return {{"schema", kAuditSchema}, {"records", list}, {"malformed_lines", malformed_lines}};
}

}  // namespace gpureap::output
