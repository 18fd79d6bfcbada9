#include "output/ps_gpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/gpu_place.h"
#include "output/table.h"
#include "text/byte_format.h"
#include "text/display_width.h"
#include "text/escape.h"

namespace gpureap::output {
namespace {

constexpr size_t kFullBar = 20;
constexpr size_t kShortestBar = 6;

std::string bar(uint64_t used, uint64_t total, size_t width, bool unicode) {
  size_t filled =
      total ? static_cast<size_t>(std::lround((static_cast<double>(used) / total) * width)) : 0;
  filled = std::min(filled, width);
  std::string out;
  for (size_t i = 0; i < width; ++i)
    out += i < filled ? (unicode ? "█" : "#") : (unicode ? "░" : ".");
  return out;
}

std::string percent(std::optional<unsigned> v) {
  return v ? fmt::format("{} %", *v) : std::string("-");
}

std::string temperature(const core::Gpu& g, bool unicode) {
  if (!g.temperature_celsius) return "-";
  return fmt::format("{} {}C", *g.temperature_celsius, unicode ? "°" : "");
}

std::string power(const core::Gpu& g) {
  return g.power_watts ? fmt::format("{:.0f} W", *g.power_watts) : "-";
}

std::string used_of_total(const core::GpuMemory& m) {
  if (!m.total_bytes || !m.used_bytes) return "?";
  return fmt::format("{}/{}", text::human_bytes(*m.used_bytes), text::human_bytes(*m.total_bytes));
}
std::string used_of_total(const core::Gpu& g) {
  return used_of_total(g.memory);
}

// A split GPU's instances, each once per GPU instance's compute instance, as the GPU column
// and the name column show them: "0/3" and "<kind> 1g.18gb (GI 3, CI 0)".
std::string instance_name(const core::GpuInstance& i) {
  return text::terminal_safe(core::instance_label(i));
}

// One line per backend: its driver and library versions, or why it is not available. A
// backend with no GPU of its kind on this machine says nothing.
std::string backend_lines(const core::DriverReading& drivers, const Style& style, bool unicode,
                          std::optional<size_t> width) {
  std::vector<const core::BackendStatus*> shown;
  for (const auto& b : drivers.backends)
    if (b.error_code != core::BackendErrorCode::NoDevice) shown.push_back(&b);
  const std::string dot = unicode ? " · " : " - ";
  std::string out;
  for (const auto* b : shown) {
    std::string who = shown.size() > 1 ? text::terminal_safe(b->label()) : "";
    if (!b->available) {
      // The error wraps under its title at word boundaries: it says what to do.
      std::string title = "GPU driver" + (who.empty() ? "" : " (" + who + ")") + ": not available";
      std::string wrapped = wrap_text(title + (unicode ? " — " : " - ") +
                                          text::terminal_safe(b->error.value_or("no GPU backend")),
                                      width);
      out +=
          style.paint(wrapped.substr(0, title.size()), Color::Bold) + wrapped.substr(title.size());
      continue;
    }
    std::string line = (who.empty() ? "" : who + dot) + "Driver " +
                       text::terminal_safe(b->driver_version.value_or("?"));
    if (const auto* v = b->detail(b->name + "_version"))
      line += dot + text::terminal_safe(b->label()) + " " + text::terminal_safe(*v);
    out += wrap_text(line, width);
  }
  return out;
}

// How wide the bar can be so that the header fits: the other columns at their natural widths,
// two spaces between columns. 0: no room for a readable bar.
size_t bar_width(const core::Snapshot& s, const GpuViewOptions& o, size_t name_width) {
  if (!o.width) return kFullBar;
  size_t place = 3;
  for (const auto& g : s.drivers.gpus)
    for (const auto& i : g.instances)
      place = std::max(place, core::instance_place(g.index, i.gpu_instance_id).size());
  size_t others = place + 2 + name_width + 2 + 2;  // GPU, NAME, the bar's gap
  size_t figure = 0, util = 4, temp = 4, watts = 5;
  for (const auto& g : s.drivers.gpus) {
    figure = std::max(figure, text::text_width(used_of_total(g)));
    for (const auto& i : g.instances)
      figure = std::max(figure, text::text_width(used_of_total(i.memory)));
    util = std::max(util, text::text_width(percent(g.utilization_percent)));
    temp = std::max(temp, text::text_width(temperature(g, o.unicode)));
    watts = std::max(watts, text::text_width(power(g)));
  }
  others += figure + 2 + util + 2 + temp + 2 + watts;
  size_t room = *o.width > others ? *o.width - others : 0;
  room = std::min(room, kFullBar);
  return room >= kShortestBar ? room : 0;
}

}  // namespace

std::string render_gpu_section(const core::Snapshot& s, const Style& style,
                               const GpuViewOptions& o) {
  std::string out = backend_lines(s.drivers, style, o.unicode, o.width);
  if (!s.drivers.any_available())
    return out + "Showing processes that hold GPU device files only.\n\n";
  size_t name_width = 4;
  for (const auto& g : s.drivers.gpus) {
    name_width = std::max(name_width, text::text_width(text::terminal_safe(g.name.value_or("?"))));
    for (const auto& i : g.instances)
      name_width = std::max(name_width, text::text_width(instance_name(i)));
  }
  size_t bars = bar_width(s, o, name_width);
  // Without room for a bar at a name's full width, a long name is cut before the bar goes.
  if (o.width && bars == 0 && name_width > 16) {
    name_width = 16;
    bars = bar_width(s, o, name_width);
  }
  const std::string ellipsis = o.unicode ? "…" : "~";
  const std::string dot = o.unicode ? " · " : " - ";
  std::vector<std::string> headers = {"GPU", "NAME", "MEMORY", "", "UTIL", "TEMP", "POWER"};
  if (!bars) headers = {"GPU", "NAME", "MEMORY", "UTIL", "TEMP", "POWER"};
  Table t(headers);
  t.set_ellipsis(ellipsis);
  for (const auto& g : s.drivers.gpus) {
    std::string name = text::fit(text::terminal_safe(g.name.value_or("?")), name_width, ellipsis);
    if (g.error) {
      t.add({{std::to_string(g.index)},
             {name},
             {"error: " + text::terminal_safe(*g.error), Color::Red}});
      continue;
    }
    auto m = s.memory_summary(g);
    Color memory_color = m.ghost_bytes ? Color::Red : Color::None;
    std::vector<Cell> row = {{std::to_string(g.index)}, {name}};
    if (bars) {
      std::string drawn = "?";
      if (g.memory.total_bytes && g.memory.used_bytes)
        drawn = bar(*g.memory.used_bytes, *g.memory.total_bytes, bars, o.unicode);
      row.push_back({drawn, memory_color});
      row.push_back({used_of_total(g)});
    } else {
      row.push_back({used_of_total(g), memory_color});
    }
    row.push_back({percent(g.utilization_percent)});
    row.push_back({temperature(g, o.unicode)});
    row.push_back({power(g)});
    t.add(std::move(row));
    std::string split = fmt::format("attributed {}", text::human_bytes(m.attributed_bytes));
    if (m.ghost_bytes) split += dot + "ghost " + text::human_bytes(m.ghost_bytes);
    if (m.unattributed_bytes)
      split += dot + "unattributed " + text::human_bytes(*m.unattributed_bytes);
    t.add_note(2, {split, Color::Dim});
    if (g.processes_error) t.add_note(2, {text::terminal_safe(*g.processes_error), Color::Yellow});
    // A split GPU's instances under it, each with its own memory.
    for (const auto& i : g.instances) {
      std::vector<Cell> child = {{core::instance_place(g.index, i.gpu_instance_id)},
                                 {text::fit(instance_name(i), name_width, ellipsis)}};
      if (bars) {
        std::string drawn = "?";
        if (i.memory.total_bytes && i.memory.used_bytes)
          drawn = bar(*i.memory.used_bytes, *i.memory.total_bytes, bars, o.unicode);
        child.push_back({drawn});
      }
      child.push_back({used_of_total(i.memory)});
      for (int k = 0; k < 3; ++k) child.push_back({""});
      t.add(std::move(child));
    }
  }
  return out + t.render(style, o.width) + "\n";
}

std::string render_compact(const core::Snapshot& s, const Style& style, const GpuViewOptions& o) {
  const std::string ellipsis = o.unicode ? "…" : "~";
  std::string out;
  if (!s.drivers.any_available()) out += backend_lines(s.drivers, style, o.unicode, o.width);
  for (const auto& g : s.drivers.gpus) {
    // On a terminal a long name gives way to the figures and the users.
    std::string name = text::terminal_safe(g.name.value_or("?"));
    if (o.width) name = text::fit(name, 24, ellipsis);
    std::string line = fmt::format("[{}] ", g.index) + name;
    if (g.error) {
      std::string error = "error: " + text::terminal_safe(*g.error);
      line += " | ";
      if (o.width)
        error = text::fit(error,
                          *o.width > text::text_width(line) ? *o.width - text::text_width(line) : 0,
                          ellipsis);
      out += line + style.paint(error, Color::Red) + "\n";
      continue;
    }
    line += " | " + percent(g.utilization_percent) + "  " + temperature(g, o.unicode) + " | ";
    auto m = s.memory_summary(g);
    line += used_of_total(g);
    // Users in PID order, each with the memory the driver lists for it on this GPU.
    struct User {
      std::string text;
      bool ghost = false;
    };
    std::vector<User> users;
    for (const auto& r : s.figures().rows)
      for (const auto& u : r.gpus) {
        if (u.index != g.index) continue;
        std::string who = "(gone)";
        if (r.process)
          who = r.process->details && r.process->details->user
                    ? text::terminal_safe(*r.process->details->user)
                    : "-";
        // A server of other processes' work and its clients say so: "(4000 <WorkServer::name>)",
        // "(4001 via 4000)".
        std::string role;
        if (u.serves_clients)
          role = " " + text::terminal_safe(*u.serves_clients);
        else if (u.server)
          role = " via " + std::to_string(*u.server);
        users.push_back(
            {" " + who + " " +
                 (u.used_bytes ? text::compact_bytes(*u.used_bytes) : std::string("?")) + " (" +
                 std::to_string(r.pid) + role + ")",
             r.is_ghost() || !r.process});
      }
    line = o.width ? text::fit(line + " |", *o.width, ellipsis) : line + " |";
    std::string all;
    for (const auto& u : users) all += u.text;
    if (users.empty()) all = " -";
    std::vector<std::string> lines;
    if (!o.width || text::text_width(line + all) <= *o.width) {
      lines.push_back(line + all);
    } else {
      // Too long: a ghost's entry is never cut; other users give way, counted ("+2").
      size_t room = *o.width;
      size_t ghosts = 0;
      for (const auto& u : users) ghosts += u.ghost ? text::text_width(u.text) : 0;
      std::vector<bool> kept(users.size());
      size_t used = text::text_width(line) + ghosts, hidden = 0;
      for (size_t i = 0; i < users.size(); ++i) {
        if (users[i].ghost) {
          kept[i] = true;
          continue;
        }
        size_t w = text::text_width(users[i].text);
        size_t others_left = 0;
        for (size_t j = i + 1; j < users.size(); ++j) others_left += !users[j].ghost;
        size_t marker = others_left ? 5 : 0;  // " +NN"
        if (used + w + marker <= room) {
          kept[i] = true;
          used += w;
        } else {
          ++hidden;
        }
      }
      // Greedy lines: a ghost's entry that does not fit goes on a line of its own, indented.
      std::vector<std::string> entries;
      for (size_t i = 0; i < users.size(); ++i)
        if (kept[i]) entries.push_back(users[i].text);
      if (hidden) entries.push_back(fmt::format(" +{}", hidden));
      const std::string indent = "  ";
      std::string current = line;
      for (const auto& e : entries) {
        if (current != indent && text::text_width(current) + text::text_width(e) > room) {
          lines.push_back(current);
          current = indent;
        }
        current += e;
      }
      lines.push_back(current);
    }
    // Painted after the fitting: a GPU with ghost memory is red.
    for (const auto& l : lines)
      out += style.paint(l, m.ghost_bytes ? Color::Red : Color::None) + "\n";
    for (const auto& i : g.instances) {
      std::string child = fmt::format("  [{}] ", core::instance_place(g.index, i.gpu_instance_id)) +
                          instance_name(i) + " | " + used_of_total(i.memory) + " |";
      size_t users_here = 0;
      for (const auto& r : s.figures().rows)
        for (const auto& u : r.gpus)
          if (u.index == g.index && u.gpu_instance_id == i.gpu_instance_id &&
              (!i.compute_instance_id || u.compute_instance_id == i.compute_instance_id)) {
            child += " " + std::to_string(r.pid);
            ++users_here;
          }
      if (!users_here) child += " -";
      out += (o.width ? text::fit(child, *o.width, ellipsis) : child) + "\n";
    }
  }
  return out;
}

}  // namespace gpureap::output
