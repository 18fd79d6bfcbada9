#include "output/ps_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/gpu_place.h"
#include "output/command_label.h"
#include "output/ghost_summary.h"
#include "output/job_notice.h"
#include "output/process_figures.h"
#include "output/ps_tree.h"
#include "output/table.h"
#include "text/byte_format.h"
#include "text/display_width.h"
#include "text/escape.h"
#include "text/time_format.h"

namespace gpureap::output {
namespace {

std::string short_device(const core::DeviceHold& h) {
  std::string base = h.path.substr(h.path.rfind('/') + 1);
  // A driver's auxiliary node, "<driver>-<role>", by its role alone (uvm, uvm-tools, modeset).
  if (auto dash = base.find('-'); dash != std::string::npos && dash > 0)
    return base.substr(dash + 1);
  return base;
}

std::string devices_text(const core::ProcessRow& r) {
  if (!r.process) return "-";
  if (!r.process->fds_readable) return "?";
  std::string out;
  // A thread's own table (DeviceHold::thread) is named after the file: nvidia0@TID.
  for (const auto& h : r.process->devices)
    out += (out.empty() ? "" : ",") + short_device(h) +
           (h.thread ? "@" + std::to_string(h.thread) : std::string());
  return out.empty() ? "-" : out;
}

std::string gpus_text(const core::ProcessRow& r) {
  std::string out;
  for (const auto& u : r.gpus)
    out += (out.empty() ? "" : ",") + core::gpu_place_text(u.index, u.gpu_instance_id);
  return out.empty() ? "-" : out;
}

std::string memory_text(const core::ProcessRow& r) {
  if (r.gpus.empty()) return "-";
  uint64_t sum = 0;
  bool unknown = false;
  for (const auto& u : r.gpus) {
    if (u.used_bytes)
      sum += *u.used_bytes;
    else
      unknown = true;
  }
  if (unknown && sum == 0) return "n/a";
  return text::human_bytes(sum) + (unknown ? "+?" : "");
}

std::string anomalies_text(const core::ProcessRow& r) {
  std::string out;
  for (auto a : r.anomalies) out += (out.empty() ? "" : " ") + std::string(core::to_string(a));
  return out;
}

std::string container_text(const core::ProcessRow& r) {
  if (!r.process || !r.process->details || !r.process->details->container) return "-";
  return text::terminal_safe(r.process->details->container->display_name());
}

Color row_color(const core::ProcessRow& r) {
  if (r.is_ghost()) return Color::Red;
  if (!r.anomalies.empty()) return Color::Yellow;
  return Color::None;
}

std::string user_text(const core::HostProcess& p) {
  if (!p.details) return "-";
  if (p.details->user) return text::terminal_safe(*p.details->user);
  return p.details->uid ? std::to_string(*p.details->uid) : "-";
}

std::string age_text(const std::optional<std::chrono::seconds>& age) {
  return age ? text::human_age(*age) : "-";
}

}  // namespace

std::string state_word(char state) {
  switch (state) {
    case 'R':
      return "running";
    case 'S':
      return "sleeping";
    case 'D':
      return "disk-sleep";
    case 'T':
      return "stopped";
    case 't':
      return "traced";
    case 'Z':
      return "zombie";
    case 'X':
      return "dead";
    case 'I':
      return "idle";
    case 'P':
      return "parked";
    default:
      return text::terminal_safe(std::string(1, state));
  }
}

namespace {

// What stands for a row without a process to read: one in another PID namespace, or gone.
std::optional<std::string> absent_command(const core::ProcessRow& r) {
  if (r.has(core::Anomaly::ForeignNamespace)) return "(host PID, not visible from this namespace)";
  // A reused number: the name is the newcomer's, which is not the listed process.
  if (r.reused) return "(PID reused; now " + text::terminal_safe(r.reused->comm) + ")";
  if (!r.process) return "(" + text::terminal_safe(r.driver_name.value_or("gone")) + ")";
  return std::nullopt;
}

const std::vector<std::string> kNoArgv;

const std::vector<std::string>& argv_of(const core::ProcessRow& r) {
  return r.process->details ? r.process->details->cmdline : kNoArgv;
}

}  // namespace

std::string role_text(const core::ProcessRow& r) {
  std::vector<pid_t> clients;
  const std::string* name = nullptr;
  std::optional<pid_t> server;
  for (const auto& u : r.gpus) {
    if (u.serves_clients) name = &*u.serves_clients;
    for (pid_t c : u.clients)
      if (std::find(clients.begin(), clients.end(), c) == clients.end()) clients.push_back(c);
    if (u.server && !server) server = u.server;
  }
  if (name)
    return fmt::format("{} · {} client{}", text::terminal_safe(*name), clients.size(),
                       clients.size() == 1 ? "" : "s");
  if (server) return fmt::format("client of {}", *server);
  return {};
}

std::string command_text(const core::ProcessRow& r) {
  const std::string role = role_text(r);
  const std::string prefix = role.empty() ? "" : "[" + role + "] ";
  if (auto absent = absent_command(r)) return prefix + *absent;
  return prefix + command_label(argv_of(r), r.process->stat.comm);
}

std::string command_line(const core::ProcessRow& r) {
  if (auto absent = absent_command(r)) return *absent;
  return command_line_text(argv_of(r), r.process->stat.comm);
}

namespace {

const std::vector<std::string> kProcessHeaders = {
    "PID", "USER",    "STATE", "GPU",  "MEMORY",    "CPU%",      "RSS",    "TIME",
    "AGE", "DEVICES", "PPID",  "PGID", "CONTAINER", "ANOMALIES", "COMMAND"};

std::vector<Cell> row_cells(const core::Snapshot& s, const core::ProcessRow& r,
                            const std::string& prefix) {
  Color c = row_color(r);
  const auto* p = r.process ? &*r.process : nullptr;
  ProcessFigures f = p ? process_figures(s, *p) : ProcessFigures{};
  return {{prefix + std::to_string(r.pid) + (r.is_ghost() ? " !" : ""), c},
          {p ? user_text(*p) : "-"},
          {p ? state_word(p->stat.state) : "gone", c},
          {gpus_text(r)},
          {memory_text(r), c},
          {cpu_percent_text(f.cpu_percent)},
          {rss_text(f.rss_bytes)},
          {cpu_time_text(f.cpu)},
          {age_text(f.run_time)},
          {devices_text(r)},
          {p ? std::to_string(p->stat.ppid) : "-"},
          {p ? std::to_string(p->stat.pgid) : "-"},
          {container_text(r)},
          {anomalies_text(r), c},
          {command_text(r)}};
}

// An ancestor shown for context only, dimmed; its user says who started the job (often root).
std::vector<Cell> ancestor_cells(const core::Snapshot& s, const core::HostProcess& p,
                                 const std::string& prefix) {
  ProcessFigures f = process_figures(s, p);
  core::ProcessRow as_row;
  as_row.pid = p.stat.pid;
  as_row.process = p;
  return {{prefix + std::to_string(p.stat.pid), Color::Dim},
          {user_text(p), Color::Dim},
          {state_word(p.stat.state), Color::Dim},
          {""},
          {""},
          {cpu_percent_text(f.cpu_percent), Color::Dim},
          {rss_text(f.rss_bytes), Color::Dim},
          {cpu_time_text(f.cpu), Color::Dim},
          {age_text(f.run_time), Color::Dim},
          {""},
          {std::to_string(p.stat.ppid), Color::Dim},
          {std::to_string(p.stat.pgid), Color::Dim},
          {""},
          {""},
          {command_text(as_row), Color::Dim}};
}

}  // namespace

std::string render_process_table(const core::Snapshot& s, const Style& style,
                                 const PsViewOptions& o) {
  Table t(kProcessHeaders);
  // At 80 columns the command keeps room for its program, what it runs and the name it gave
  // itself (a 7-digit PID included); what goes first is what `--json` or `--tree` tells better.
  t.drop_when_narrow({"PGID", "PPID", "DEVICES", "AGE", "TIME", "CONTAINER", "RSS", "CPU%"}, 38);
  // Then a long user name is cut, and the anomalies go to a line under their row: cut, they
  // would no longer say what is wrong.
  t.shrink_when_narrow("USER", 8);
  t.fold_when_narrow("ANOMALIES", "anomalies");
  t.set_ellipsis(o.unicode ? "…" : "~");
  if (!o.tree) {
    for (const auto* r : table_order(s, o.sort)) t.add(row_cells(s, *r, ""));
  } else {
    // Rows inside their process tree: every ancestor of a row is shown (dimmed) for context.
    for (const auto& line : tree_lines(s, tree_glyphs(o.unicode))) {
      if (const auto* r = s.row(line.pid))
        t.add(row_cells(s, *r, line.prefix));
      else if (const auto* p = s.find(line.pid))
        t.add(ancestor_cells(s, *p, line.prefix));
    }
  }
  if (t.empty())
    return wrap_text("No process " + (o.scope.empty() ? "" : o.scope + " ") +
                         "holds a GPU device file or is listed by the driver.",
                     o.width);
  return t.render(style, o.width);
}

namespace {

// Each line of `text` wrapped to the width, painted.
std::string painted(const std::string& text, Color color, const Style& style,
                    std::optional<size_t> width) {
  std::string out;
  std::string wrapped = wrap_text(text, width);
  for (size_t i = 0; i < wrapped.size();) {
    size_t end = wrapped.find('\n', i);
    out += style.paint(std::string_view(wrapped).substr(i, end - i), color) + "\n";
    i = end + 1;
  }
  return out;
}

// A driver client several processes hold (a DRM file inherited across fork) is listed once,
// on one of them: say who else holds it, so the others' empty MEMORY is not read as nothing.
std::string shared_client_lines(const core::Snapshot& s, std::optional<size_t> width) {
  std::string out;
  for (const auto& r : s.rows)
    for (const auto& u : r.gpus) {
      if (u.shared_with.empty()) continue;
      std::string pids;
      for (pid_t p : u.shared_with) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
      out += wrap_text(
          fmt::format(
              "PID {} shares its GPU {} memory with PID {}: one driver client, counted once.",
              r.pid, u.index, pids),
          width);
    }
  return out;
}

// Each stalled job that a shown row belongs to: doctor's one-line story (which rank is gone,
// what the others hold) and the command that ends the whole job.
std::string stalled_job_lines(const core::Snapshot& s, const Style& style,
                              std::optional<size_t> width) {
  std::string out;
  for (const auto& n : stalled_job_notices(s)) {
    const std::string headline = n.summary + ".";
    const std::string advice = "`gpureap doctor` explains; `" + n.command + "` ends the whole job.";
    if (!width || text::text_width(headline) + 1 + text::text_width(advice) <= *width)
      out += style.paint(headline, Color::Red) + " " + advice + "\n";
    else
      out += painted(headline, Color::Red, style, width) + wrap_text(advice, width);
  }
  return out;
}

}  // namespace

std::string render_summary(const core::Snapshot& s, const Style& style, std::optional<size_t> width,
                           const std::string& scope) {
  std::string out = stalled_job_lines(s, style, width);
  for (const auto& n : ghost_notices(s)) {
    std::string advice;
    switch (n.kind) {
      case GhostCase::Kept:
        advice = "`gpureap doctor` explains; `" + n.command + "` frees it.";
        break;
      case GhostCase::Leaked:
        advice = "Only a GPU reset (or a reboot) frees it: `" + n.command + "`" +
                 (n.blocked.empty() ? "." : " (" + n.blocked + ").");
        break;
      case GhostCase::Unknown:
        advice = "`" + n.command + "` sees every holder.";
        break;
      case GhostCase::Served:
        advice = "`" + n.command + "` names the command that ends the client's work.";
        break;
    }
    // One line when it fits, else the headline, then the advice on lines of its own: the
    // command to run is never split.
    if (!width || text::text_width(n.headline) + 1 + text::text_width(advice) <= *width)
      out += style.paint(n.headline, Color::Red) + " " + advice + "\n";
    else
      out += painted(n.headline, Color::Red, style, width) + wrap_text(advice, width);
  }
  if (out.empty()) {
    bool anomalies = std::any_of(s.rows.begin(), s.rows.end(),
                                 [](const core::ProcessRow& r) { return !r.anomalies.empty(); });
    out = wrap_text(
        anomalies ? "Some holders need attention (see ANOMALIES). `gpureap doctor` explains."
        : s.rows.empty() && !scope.empty() ? "`gpureap ps` without the filter shows every holder."
        : s.rows.empty()
            ? "Nothing holds the GPUs. `gpureap ps --json` gives the full view."
            : "No ghosts. `gpureap ps --tree` shows the holders in their process tree.",
        width);
  }
  return shared_client_lines(s, width) + out;
}

std::string render_ps(const core::Snapshot& s, const Style& style, const PsViewOptions& o) {
  GpuViewOptions gpus{o.width, o.unicode};
  if (o.compact) {
    // The footer only when it has something to say: the compact form is for a glance.
    std::string out = render_compact(s, style, gpus);
    if (!ghost_notices(s).empty()) out += render_summary(s, style, o.width, o.scope);
    return o.unicode ? out : text::ascii_only(out);
  }
  std::string out = render_gpu_section(s, style, gpus) + render_process_table(s, style, o) + "\n" +
                    render_summary(s, style, o.width, o.scope);
  return o.unicode ? out : text::ascii_only(out);
}

std::string render_ps_csv(const core::Snapshot& s) {
  std::string out =
      "pid,user,state,gpus,used_bytes,devices,ppid,pgid,sid,container,anomalies,listed_by_driver,"
      "work_server,server,command\n";
  for (const auto& r : s.rows) {
    const auto* p = r.process ? &*r.process : nullptr;
    std::optional<uint64_t> bytes;
    for (const auto& u : r.gpus)
      if (u.used_bytes) bytes = bytes.value_or(0) + *u.used_bytes;
    std::string gpus;
    for (const auto& u : r.gpus)
      gpus += (gpus.empty() ? "" : " ") + core::gpu_place_text(u.index, u.gpu_instance_id);
    std::string devices;
    if (p)
      for (const auto& h : p->devices) devices += (devices.empty() ? "" : " ") + h.path;
    std::string user = p && p->details && p->details->user ? *p->details->user : "";
    std::string work_server, server;
    for (const auto& u : r.gpus) {
      if (u.serves_clients && work_server.empty()) work_server = *u.serves_clients;
      if (u.server && server.empty()) server = std::to_string(*u.server);
    }
    // The command last: the one free-text column.
    const std::string role = text::csv_field(work_server) + "," + server;
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.pid, text::csv_field(user),
        p ? std::string(1, p->stat.state) : "", gpus, bytes ? std::to_string(*bytes) : "",
        text::csv_field(devices), p ? std::to_string(p->stat.ppid) : "",
        p ? std::to_string(p->stat.pgid) : "", p ? std::to_string(p->stat.sid) : "",
        text::csv_field(container_text(r) == "-" ? "" : container_text(r)), anomalies_text(r),
        r.listed_by_driver ? "true" : "false", role, text::csv_field(command_line(r)));
  }
  return out;
}

}  // namespace gpureap::output
