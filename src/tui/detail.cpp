#include "tui/detail.h"

#include <fmt/format.h>

#include <algorithm>

#include "doctor/examine.h"
#include "reap/safety.h"
#include "text/byte_format.h"
#include "text/display_width.h"
#include "text/escape.h"
#include "text/wrap.h"

namespace gpureap::tui {
namespace {

using text::text_width;
using text::wrap;

void add_wrapped(std::vector<Line>& out, const std::string& label, const std::string& text,
                 size_t width, Role role = Role::Normal, const std::string& indent = "") {
  size_t lw = text_width(label);
  size_t room = width > lw + 1 ? width - lw : 1;
  auto lines = wrap(text, room);
  for (size_t i = 0; i < lines.size(); ++i) {
    Line l;
    l.add(i == 0 ? label : indent + std::string(lw > indent.size() ? lw - indent.size() : 0, ' '),
          Role::Dim);
    l.add(lines[i], role);
    out.push_back(std::move(l));
  }
}

Role severity_role(doctor::Severity s) {
  return s == doctor::Severity::Critical  ? Role::Ghost
         : s == doctor::Severity::Warning ? Role::Warn
                                          : Role::Normal;
}

std::string fds_text(const std::vector<int>& fds) {
  std::string out;
  for (int fd : fds) out += (out.empty() ? "" : ",") + std::to_string(fd);
  return out;
}

// PID, state, user, age and the process's family.
Line head_line(const TopRow& r, const core::HostProcess* p) {
  Line head;
  head.add(fmt::format("PID {}", r.pid), Role::Header);
  head.add("  " + r.state_text(), r.ghost ? Role::Ghost : r.stuck ? Role::Stuck : Role::Normal);
  if (p) {
    head.add(fmt::format("  user {}", r.user));
    if (r.uid) head.add(fmt::format(" (uid {})", *r.uid), Role::Dim);
    head.add("  age " + r.age_text());
    head.add(fmt::format("  parent {} · group {} · session {} · threads {}", p->stat.ppid,
                         p->stat.pgid, p->stat.sid, p->stat.num_threads),
             Role::Dim);
  }
  return head;
}

// What /proc says: the command, where it waits, its container and namespace PIDs, its GPU files.
void add_process(std::vector<Line>& out, const TopRow& r, const core::HostProcess* p,
                 size_t width) {
  add_wrapped(out, "command    ", r.command_line.empty() ? r.command : r.command_line, width);
  if (p && p->details && p->details->wchan && !p->details->wchan->empty())
    add_wrapped(out, "waits in   ",
                text::terminal_safe(*p->details->wchan) +
                    " (uninterruptible: no signal acts until this kernel call returns)",
                width, Role::Stuck);
  if (r.container != "-") add_wrapped(out, "container  ", r.container, width);
  if (p && p->details && p->details->ns_pids.size() > 1) {
    std::string ns;
    for (pid_t n : p->details->ns_pids) ns += (ns.empty() ? "" : " → ") + std::to_string(n);
    add_wrapped(out, "ns pids    ", ns, width, Role::Dim);
  }
  if (p) {
    std::string devices;
    if (!p->fds_readable)
      devices = "cannot read its open files (run as root or grant CAP_SYS_PTRACE)";
    for (const auto& h : p->devices)
      devices += (devices.empty() ? "" : ", ") + text::terminal_safe(h.path) + " (fd " +
                 fds_text(h.fds) + ")";
    add_wrapped(out, "devices    ", devices.empty() ? "none" : devices, width);
  }
}

// What the driver lists for it, its anomalies, and whether this user can act on it.
void add_gpu_use(std::vector<Line>& out, const TopRow& r, const core::ProcessRow* row,
                 const Viewer& viewer, size_t width) {
  if (row && !row->gpus.empty()) {
    std::string mem;
    for (const auto& u : row->gpus) {
      mem += (mem.empty() ? "" : ", ") +
             fmt::format("GPU {} {} ({})", u.index,
                         u.used_bytes ? text::human_bytes(*u.used_bytes) : "unknown",
                         core::to_string(u.kind));
      if (u.sm_utilization_percent) mem += fmt::format(" SM {} %", *u.sm_utilization_percent);
    }
    add_wrapped(out, "GPU memory ", mem, width);
  } else if (!r.context) {
    add_wrapped(out, "GPU memory ", "none listed by the driver for this PID", width, Role::Dim);
  }
  if (!r.anomalies.empty())
    add_wrapped(out, "anomalies  ", r.anomalies, width,
                r.ghost   ? Role::Ghost
                : r.stuck ? Role::Stuck
                          : Role::Warn);
  if (!r.actionable)
    add_wrapped(
        out, "actions    ",
        "you cannot signal it: it belongs to " + r.user + " and gpureap does not run as root",
        width, Role::Warn);
  else if (!viewer.privileged() && r.gone)
    add_wrapped(out, "actions    ", "k kills the processes that keep its memory, if they are yours",
                width, Role::Dim);
}

// What the doctor finds about this PID: evidence, meaning, remedies.
void add_findings(std::vector<Line>& out, const doctor::Evidence& evidence, pid_t pid,
                  size_t width) {
  auto findings = detail_findings(evidence, pid);
  out.push_back({});
  if (findings.empty()) {
    out.push_back(Line().add("gpureap doctor: nothing wrong with this process", Role::Dim));
    return;
  }
  out.push_back(Line().add("gpureap doctor:", Role::Header));
  for (const auto& f : findings) {
    Line l;
    l.add(fmt::format("[{}] ", doctor::to_string(f.severity)), severity_role(f.severity));
    l.add(std::string(doctor::to_string(f.code)), Role::Header);
    if (f.memory_bytes) l.add("  " + text::human_bytes(f.memory_bytes));
    out.push_back(std::move(l));
    for (const auto& e : f.evidence)
      add_wrapped(out, "  • ", text::terminal_safe(e), width, Role::Normal, "  ");
    if (!f.explanation.empty())
      add_wrapped(out, "  ", text::terminal_safe(f.explanation), width, Role::Dim);
    for (const auto& m : f.remedy)
      add_wrapped(out, "  $ ", text::terminal_safe(m.line()), width, Role::Key, "  ");
  }
}

}  // namespace

std::vector<doctor::Finding> detail_findings(const doctor::Evidence& evidence, pid_t pid) {
  // `gpureap doctor`'s scope without options; top read the logs itself, so its user may see
  // every line of them.
  auto findings =
      doctor::examine(evidence, {.reader = doctor::Reader::Privileged}, reap::is_protected_process);
  std::erase_if(findings, [&](const doctor::Finding& f) {
    return std::find(f.pids.begin(), f.pids.end(), pid) == f.pids.end();
  });
  return findings;
}

std::vector<Line> detail_lines(const doctor::Evidence& evidence, const ViewRow& v,
                               const Viewer& viewer, size_t width) {
  const core::Snapshot& s = *evidence.last;
  const TopRow& r = v.row;
  const core::HostProcess* p = s.find(r.pid);
  std::vector<Line> out;
  out.push_back(head_line(r, p));
  add_process(out, r, p, width);
  add_gpu_use(out, r, s.row(r.pid), viewer, width);
  add_findings(out, evidence, r.pid, width);
  return out;
}

}  // namespace gpureap::tui
