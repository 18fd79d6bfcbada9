#include "output/ps_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "output/ghost_summary.h"
#include "output/table.h"
#include "text/byte_format.h"
#include "text/escape.h"

namespace gpureap::output {
namespace {

std::string short_device(const core::DeviceHold& h) {
  std::string base = h.path.substr(h.path.rfind('/') + 1);
  if (base.starts_with("nvidia-")) return base.substr(7);  // uvm, uvm-tools, modeset
  return base;
}

std::string devices_text(const core::ProcessRow& r) {
  if (!r.process) return "-";
  if (!r.process->fds_readable) return "?";
  std::string out;
  for (const auto& h : r.process->devices) out += (out.empty() ? "" : ",") + short_device(h);
  return out.empty() ? "-" : out;
}

std::string gpus_text(const core::ProcessRow& r) {
  std::string out;
  for (const auto& u : r.gpus) out += (out.empty() ? "" : ",") + std::to_string(u.index);
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
  const auto& c = *r.process->details->container;
  std::string id = c.id ? c.id->substr(0, 12) : (c.pod_uid ? "pod " + c.pod_uid->substr(0, 8) : "");
  return text::terminal_safe(c.runtime + (id.empty() ? "" : ":" + id));
}

Color row_color(const core::ProcessRow& r) {
  if (r.is_ghost()) return Color::Red;
  if (!r.anomalies.empty()) return Color::Yellow;
  return Color::None;
}

std::string bar(uint64_t used, uint64_t total, size_t width) {
  size_t filled =
      total ? static_cast<size_t>(std::lround((static_cast<double>(used) / total) * width)) : 0;
  filled = std::min(filled, width);
  std::string out;
  for (size_t i = 0; i < width; ++i) out += i < filled ? "█" : "░";
  return out;
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

std::string command_text(const core::ProcessRow& r) {
  if (r.has(core::Anomaly::ForeignNamespace)) return "(host PID, not visible from this namespace)";
  if (!r.process) return "(" + text::terminal_safe(r.driver_name.value_or("gone")) + ")";
  const auto* d = r.process->details ? &*r.process->details : nullptr;
  if (!d || d->cmdline.empty()) return "[" + text::terminal_safe(r.process->stat.comm) + "]";
  std::string out;
  for (const auto& a : d->cmdline) out += (out.empty() ? "" : " ") + text::terminal_safe(a);
  // A process that renamed itself (a worker, a forked helper) shows that name too.
  const std::string& argv0 = d->cmdline.front();
  std::string base = argv0.substr(argv0.rfind('/') + 1);
  if (!base.starts_with(r.process->stat.comm))
    out += " (" + text::terminal_safe(r.process->stat.comm) + ")";
  return out;
}

// One line per backend: its driver and library versions, or why it is not available. A
// backend with no GPU of its kind on this machine (no AMD GPU) says nothing.
std::string backend_lines(const core::DriverReading& drivers, const Style& style) {
  std::vector<const core::BackendStatus*> shown;
  for (const auto& b : drivers.backends)
    if (b.error_code != core::BackendErrorCode::NoDevice) shown.push_back(&b);
  std::string out;
  for (const auto* b : shown) {
    std::string who = shown.size() > 1 ? text::terminal_safe(b->label()) : "";
    if (!b->available) {
      out += style.paint("GPU driver" + (who.empty() ? "" : " (" + who + ")") + ": not available",
                         Color::Bold) +
             " — " + text::terminal_safe(b->error.value_or("no GPU backend")) + "\n";
      continue;
    }
    out += (who.empty() ? "" : who + " · ") + "Driver " +
           text::terminal_safe(b->driver_version.value_or("?"));
    if (const auto* v = b->detail(b->name + "_version"))
      out += " · " + text::terminal_safe(b->label()) + " " + text::terminal_safe(*v);
    out += "\n";
  }
  return out;
}

std::string render_gpu_section(const core::Snapshot& s, const Style& style) {
  std::string out = backend_lines(s.drivers, style);
  if (!s.drivers.any_available())
    return out + "Showing processes that hold GPU device files only.\n\n";
  Table t({"GPU", "NAME", "MEMORY", "", "UTIL", "TEMP", "POWER"});
  for (const auto& g : s.drivers.gpus) {
    std::string name = text::terminal_safe(g.name.value_or("?"));
    if (g.error) {
      t.add({{std::to_string(g.index)},
             {name},
             {"error: " + text::terminal_safe(*g.error), Color::Red}});
      continue;
    }
    auto m = s.memory_summary(g);
    std::string mem = "?", used = "?";
    if (g.memory.total_bytes && g.memory.used_bytes) {
      mem = bar(*g.memory.used_bytes, *g.memory.total_bytes, 20);
      used = fmt::format("{}/{}", text::human_bytes(*g.memory.used_bytes),
                         text::human_bytes(*g.memory.total_bytes));
    }
    std::string split = fmt::format("attributed {}", text::human_bytes(m.attributed_bytes));
    if (m.ghost_bytes) split += " · ghost " + text::human_bytes(m.ghost_bytes);
    if (m.unattributed_bytes)
      split += " · unattributed " + text::human_bytes(*m.unattributed_bytes);
    auto pct = [](std::optional<unsigned> v) {
      return v ? fmt::format("{} %", *v) : std::string("-");
    };
    t.add({{std::to_string(g.index)},
           {name},
           {mem, m.ghost_bytes ? Color::Red : Color::None},
           {used},
           {pct(g.utilization_percent)},
           {g.temperature_celsius ? fmt::format("{} °C", *g.temperature_celsius) : "-"},
           {g.power_watts ? fmt::format("{:.0f} W", *g.power_watts) : "-"}});
    t.add({{""}, {""}, {split, Color::Dim}});
    if (g.processes_error)
      t.add({{""}, {""}, {text::terminal_safe(*g.processes_error), Color::Yellow}});
  }
  return out + t.render(style, std::nullopt) + "\n";
}

namespace {

std::vector<Cell> row_cells(const core::ProcessRow& r, const std::string& prefix) {
  Color c = row_color(r);
  const auto* p = r.process ? &*r.process : nullptr;
  std::string user =
      p && p->details && p->details->user ? text::terminal_safe(*p->details->user) : "-";
  return {{prefix + std::to_string(r.pid) + (r.is_ghost() ? " !" : ""), c},
          {user},
          {p ? state_word(p->stat.state) : "gone", c},
          {gpus_text(r)},
          {memory_text(r), c},
          {devices_text(r)},
          {p ? std::to_string(p->stat.ppid) : "-"},
          {p ? std::to_string(p->stat.pgid) : "-"},
          {container_text(r)},
          {anomalies_text(r), c},
          {command_text(r)}};
}

// An ancestor shown for context only, dimmed.
std::vector<Cell> ancestor_cells(const core::HostProcess& p, const std::string& prefix) {
  return {{prefix + std::to_string(p.stat.pid), Color::Dim},
          {""},
          {state_word(p.stat.state), Color::Dim},
          {""},
          {""},
          {""},
          {std::to_string(p.stat.ppid), Color::Dim},
          {std::to_string(p.stat.pgid), Color::Dim},
          {""},
          {""},
          {"[" + text::terminal_safe(p.stat.comm) + "]", Color::Dim}};
}

// Every row and each of its ancestors, in tree order, with its depth.
std::vector<std::pair<pid_t, int>> tree_order(const core::Snapshot& s) {
  std::set<pid_t> shown;
  for (const auto& r : s.rows) {
    for (const core::HostProcess* p = s.find(r.pid); p && !shown.count(p->stat.pid);
         p = s.find(p->stat.ppid))
      shown.insert(p->stat.pid);
    shown.insert(r.pid);
  }
  std::map<pid_t, std::vector<pid_t>> children;
  std::vector<pid_t> roots;
  for (pid_t pid : shown) {
    const auto* p = s.find(pid);
    if (p && shown.count(p->stat.ppid) && p->stat.ppid != pid)
      children[p->stat.ppid].push_back(pid);
    else
      roots.push_back(pid);
  }
  // A hostile procfs can make parent links a cycle: every shown process is walked once, and
  // one that no root reaches starts a tree of its own.
  std::vector<std::pair<pid_t, int>> order;
  std::set<pid_t> walked;
  std::function<void(pid_t, int)> walk = [&](pid_t pid, int depth) {
    if (!walked.insert(pid).second || depth > 256) return;
    order.emplace_back(pid, depth);
    for (pid_t c : children[pid]) walk(c, depth + 1);
  };
  for (pid_t r : roots) walk(r, 0);
  for (pid_t pid : shown)
    if (!walked.count(pid)) walk(pid, 0);
  return order;
}

}  // namespace

std::string render_process_table(const core::Snapshot& s, const Style& style,
                                 const PsViewOptions& o) {
  Table t({"PID", "USER", "STATE", "GPU", "MEMORY", "DEVICES", "PPID", "PGID", "CONTAINER",
           "ANOMALIES", "COMMAND"});
  if (!o.tree) {
    for (const auto& r : s.rows) t.add(row_cells(r, ""));
  } else {
    // Rows inside their process tree: every ancestor of a row is shown (dimmed) for context.
    for (auto [pid, depth] : tree_order(s)) {
      std::string prefix = depth ? std::string(size_t{2} * (depth - 1), ' ') + "└ " : "";
      if (const auto* r = s.row(pid))
        t.add(row_cells(*r, prefix));
      else if (const auto* p = s.find(pid))
        t.add(ancestor_cells(*p, prefix));
    }
  }
  if (t.empty()) return "No process holds a GPU device file or is listed by the driver.\n";
  return t.render(style, o.width);
}

// A driver client several processes hold (a DRM file inherited across fork) is listed once,
// on one of them: say who else holds it, so the others' empty MEMORY is not read as nothing.
std::string shared_client_lines(const core::Snapshot& s) {
  std::string out;
  for (const auto& r : s.rows)
    for (const auto& u : r.gpus) {
      if (u.shared_with.empty()) continue;
      std::string pids;
      for (pid_t p : u.shared_with) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
      out += fmt::format(
          "PID {} shares its GPU {} memory with PID {}: one driver client, counted once.\n", r.pid,
          u.index, pids);
    }
  return out;
}

std::string render_summary(const core::Snapshot& s, const Style& style) {
  std::string out;
  for (const auto& n : ghost_notices(s)) {
    out += style.paint(n.headline, Color::Red) + " ";
    switch (n.kind) {
      case GhostCase::Kept:
        out += "`gpureap doctor` explains; `" + n.command + "` frees it.\n";
        break;
      case GhostCase::Leaked:
        out += "Only a GPU reset (or a reboot) frees it: `" + n.command + "`.\n";
        break;
      case GhostCase::Unknown:
        out += "`" + n.command + "` sees every holder.\n";
        break;
    }
  }
  if (out.empty()) {
    bool anomalies = std::any_of(s.rows.begin(), s.rows.end(),
                                 [](const core::ProcessRow& r) { return !r.anomalies.empty(); });
    out = anomalies ? "Some holders need attention (see ANOMALIES). `gpureap doctor` explains.\n"
          : s.rows.empty()
              ? "Nothing holds the GPUs. `gpureap ps --json` gives the full view.\n"
              : "No ghosts. `gpureap ps --tree` shows the holders in their process tree.\n";
  }
  return shared_client_lines(s) + out;
}

std::string render_ps(const core::Snapshot& s, const Style& style, const PsViewOptions& o) {
  return render_gpu_section(s, style) + render_process_table(s, style, o) + "\n" +
         render_summary(s, style);
}

std::string render_ps_csv(const core::Snapshot& s) {
  std::string out =
      "pid,user,state,gpus,used_bytes,devices,ppid,pgid,sid,container,anomalies,listed_by_driver,"
      "command\n";
  for (const auto& r : s.rows) {
    const auto* p = r.process ? &*r.process : nullptr;
    std::optional<uint64_t> bytes;
    for (const auto& u : r.gpus)
      if (u.used_bytes) bytes = bytes.value_or(0) + *u.used_bytes;
    std::string gpus;
    for (const auto& u : r.gpus) gpus += (gpus.empty() ? "" : " ") + std::to_string(u.index);
    std::string devices;
    if (p)
      for (const auto& h : p->devices) devices += (devices.empty() ? "" : " ") + h.path;
    std::string user = p && p->details && p->details->user ? *p->details->user : "";
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.pid, text::csv_field(user),
        p ? std::string(1, p->stat.state) : "", gpus, bytes ? std::to_string(*bytes) : "",
        text::csv_field(devices), p ? std::to_string(p->stat.ppid) : "",
        p ? std::to_string(p->stat.pgid) : "", p ? std::to_string(p->stat.sid) : "",
        text::csv_field(container_text(r) == "-" ? "" : container_text(r)), anomalies_text(r),
        r.listed_by_driver ? "true" : "false", text::csv_field(command_text(r)));
  }
  return out;
}

}  // namespace gpureap::output
