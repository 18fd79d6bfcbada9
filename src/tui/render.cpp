// TopModel::compose: the header (GPUs, host, status), the process table, the detail pane and
// the footer. Dialogs are in render_dialog.cpp.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "backend/registry.h"
#include "core/gpu_place.h"
#include "output/ghost_summary.h"
#include "output/job_notice.h"
#include "output/view_incomplete.h"
#include "text/byte_format.h"
#include "text/display_width.h"
#include "text/escape.h"
#include "text/time_format.h"
#include "tui/detail.h"
#include "tui/model.h"

namespace gpureap::tui {
namespace {

using text::columns;
using text::fit;
using text::pad_left;
using text::pad_right;
using text::text_width;

std::string interval_text(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return fmt::format("{}s", d.count() / 1000);
  return fmt::format("{}ms", d.count());
}

Role row_role(const TopRow& r) {
  if (r.ghost) return Role::Ghost;
  if (r.stuck) return Role::Stuck;
  if (r.anomalous) return Role::Warn;
  if (r.context || !r.actionable) return Role::Dim;
  return Role::Normal;
}

// The memory bar: attributed, ghost, unattributed, free — in that order, `width` cells.
void add_bar(Line& l, const core::Gpu& g, const core::GpuMemorySummary& m, size_t width,
             const Glyphs& gl) {
  uint64_t total = g.memory.total_bytes.value_or(0);
  if (!total) {
    l.add(std::string(width, ' '));
    return;
  }
  auto cells = [&](uint64_t bytes) {
    return static_cast<size_t>(std::lround(static_cast<double>(bytes) / static_cast<double>(total) *
                                           static_cast<double>(width)));
  };
  size_t a = std::min(width, cells(m.attributed_bytes));
  size_t gh = std::min(width - a, cells(m.ghost_bytes));
  if (m.ghost_bytes && !gh && a < width) gh = 1;  // a ghost is never invisible
  size_t un = std::min(width - a - gh, cells(m.unattributed_bytes.value_or(0)));
  size_t used_cells =
      g.memory.used_bytes ? std::min(width, cells(*g.memory.used_bytes)) : a + gh + un;
  if (a + gh + un < used_cells)
    a += used_cells - (a + gh + un);  // rounding: the bar shows the used total
  auto repeat = [](const char* glyph, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += glyph;
    return s;
  };
  l.add(repeat(gl.full, a), Role::BarAttributed);
  l.add(repeat(gl.ghost, gh), Role::BarGhost);
  l.add(repeat(gl.unattributed, un), Role::BarUnattributed);
  l.add(repeat(gl.free, width - a - gh - un), Role::BarFree);
}

// "[bar] used/total": a GPU's, or a GPU instance's (its memory as a Gpu of its own).
void add_memory(Line& l, const core::Gpu& g, const core::GpuMemorySummary& m, size_t width,
                const Glyphs& gl) {
  l.add("[", Role::Dim);
  add_bar(l, g, m, width, gl);
  l.add("] ", Role::Dim);
  std::string used = g.memory.used_bytes && g.memory.total_bytes
                         ? text::compact_bytes(*g.memory.used_bytes) + "/" +
                               text::compact_bytes(*g.memory.total_bytes)
                         : "?";
  l.add(pad_right(used, 13), m.ghost_bytes ? Role::Ghost : Role::Normal);
}

// "attributed 89.2G · ghost 8.0G · unattributed 1.0G"
void add_memory_split(Line& l, const core::GpuMemorySummary& m, const Glyphs& gl) {
  std::string split = fmt::format("attributed {}", text::compact_bytes(m.attributed_bytes));
  l.add(split, Role::Dim);
  if (m.ghost_bytes)
    l.add(fmt::format(" {} ghost {}", gl.dot, text::compact_bytes(m.ghost_bytes)), Role::Ghost);
  if (m.unattributed_bytes && *m.unattributed_bytes)
    l.add(fmt::format(" {} unattributed {}", gl.dot, text::compact_bytes(*m.unattributed_bytes)),
          Role::Warn);
  l.add(" ");
}

// A cell's text and role: the row's role where the column says what is wrong, else `plain`.
std::pair<std::string, Role> table_cell(const TopRow& r, Column column, Role role, Role plain,
                                        bool tagged) {
  switch (column) {
    case Column::Pid:
      return {std::to_string(r.pid), tagged ? Role::Tagged : role};
    case Column::User:
      return {r.user, plain};
    case Column::Gpu:
      return {r.gpu_text(), plain};
    case Column::Memory:
      return {r.memory_text(), role};
    case Column::Sm:
      return {r.sm_text(), plain};
    case Column::Cpu:
      return {r.cpu_text(), plain};
    case Column::Rss:
      return {r.rss_text(), plain};
    case Column::Time:
      return {r.time_text(), plain};
    case Column::State:
      return {r.state_text(), role};
    case Column::Age:
      return {r.age_text(), plain};
    case Column::Container:
      return {r.container, plain};
    case Column::Anomalies:
      return {r.anomalies, role};
    case Column::Command:
      break;
  }
  return {"", plain};
}

// Without its trailing spaces, and cut with an ellipsis when wider than `width`: a line that
// does not fit says so.
Line ellipsized(Line l, size_t width, const char* ellipsis) {
  while (!l.spans.empty()) {
    auto& t = l.spans.back().text;
    while (!t.empty() && t.back() == ' ') t.pop_back();
    if (!t.empty()) break;
    l.spans.pop_back();
  }
  if (l.width() <= width || width == 0) return l;
  Role role = l.spans.back().role;
  return slice(l, 0, width - 1).add(ellipsis, role);
}

std::string pct(std::optional<unsigned> v) {
  return v ? fmt::format("{}%", *v) : "-";
}

}  // namespace

Frame TopModel::compose() const {
  Frame f;
  f.width = layout_.width;
  f.height = layout_.height;
  if (layout_.too_small) {
    f.lines.push_back(
        Line().add(fit(fmt::format("gpureap top needs {}x{}; this terminal is {}x{}", kMinWidth,
                                   kMinHeight, layout_.width, layout_.height),
                       layout_.width),
                   Role::Warn));
    if (layout_.height > 1) f.lines.push_back(Line().add(fit("q quits", layout_.width), Role::Dim));
    return f;
  }
  f.lines.resize(layout_.height);
  compose_header(f);
  compose_table(f);
  if (detail_) compose_detail(f);
  compose_footer(f);
  if (mode_ == Mode::Help || mode_ == Mode::Plan || mode_ == Mode::Running ||
      mode_ == Mode::Outcome)
    compose_dialog(f);
  for (auto& l : f.lines) l = fit_line(l, f.width);
  return f;
}

void TopModel::compose_header(Frame& f) const {
  compose_title(f);
  if (!snapshot_) {
    f.lines[layout_.gpu_y] = Line().add("collecting the first sample…", Role::Dim);
    return;
  }
  compose_gpus(f);
  compose_host(f);
  compose_status(f);
}

void TopModel::compose_title(Frame& f) const {
  const Glyphs& gl = glyphs(settings_.unicode);
  const size_t w = layout_.width;
  const core::Snapshot* s = snapshot_.get();
  Line title;
  title.add(" gpureap top", Role::Title);
  if (s)
    title.add(
        fmt::format(" {} {} {} {} {} every {}", gl.dot, text::terminal_safe(s->hostname), gl.dot,
                    text::local_clock(s->timestamp), gl.dot, interval_text(settings_.interval)),
        Role::Title);
  std::string right;
  if (settings_.readonly) right += " READ-ONLY";
  if (!settings_.viewer.privileged()) right += " not root";
  size_t tw = title.width(), rw = text_width(right);
  if (tw + rw + 1 < w)
    title.add(std::string(w - tw - rw - 1, ' '), Role::Title).add(right + " ", Role::Title);
  f.lines[layout_.title_y] = pad_line(title, w);
}

// One line per GPU, or one that says why there are none.
void TopModel::compose_gpus(Frame& f) const {
  const auto& drivers = snapshot_->drivers;
  if (drivers.gpus.empty()) {
    Line l;
    const core::BackendStatus* b = drivers.first_down();
    if (b && b->error_code == core::BackendErrorCode::NotAnswering)
      l.add("GPU driver not answering", Role::Error)
          .add(" — " + text::terminal_safe(b->error.value_or("")), Role::Dim);
    else if (b)
      l.add("GPU driver: not available", Role::Warn)
          .add(" — " + text::terminal_safe(b->error.value_or("no GPU backend")) +
                   " (processes holding GPU device files only)",
               Role::Dim);
    else
      l.add("the driver reports no GPU", Role::Dim);
    f.lines[layout_.gpu_y] = l;
    return;
  }
  if (instance_lines_) {
    size_t y = 0;
    for (const auto& g : drivers.gpus) {
      if (y < layout_.gpu_lines) f.lines[layout_.gpu_y + y++] = gpu_line(g);
      for (unsigned gi : core::gpu_instance_ids(g))
        if (y < layout_.gpu_lines) f.lines[layout_.gpu_y + y++] = instance_line(g, gi);
    }
    return;
  }
  for (size_t i = 0; i < layout_.gpu_lines && i < drivers.gpus.size(); ++i)
    f.lines[layout_.gpu_y + i] = gpu_line(drivers.gpus[i]);
  if (layout_.more_gpus)
    f.lines[layout_.gpu_y + layout_.gpu_lines] =
        Line().add(fmt::format("+{} more GPUs (a taller terminal shows them)",
                               drivers.gpus.size() - layout_.gpu_lines),
                   Role::Dim);
}

// Index, name, the memory bar and figures, utilisation, temperature, power, the memory split
// (when there is room) and the sparkline.
Line TopModel::gpu_line(const core::Gpu& g) const {
  const Glyphs& gl = glyphs(settings_.unicode);
  const size_t w = layout_.width;
  const core::Snapshot* s = snapshot_.get();
  size_t name_w = w >= 120 ? 16 : 10;
  size_t bar_w = w >= 160 ? 30 : w >= 120 ? 24 : 14;
  size_t fixed = 3 + name_w + 1 + bar_w + 2 + 1 + 13 + 5 + 6 + 6;
  bool legend = w >= fixed + 60;
  Line l;
  l.add(pad_right(std::to_string(g.index), 3), Role::Header);
  std::string name = text::terminal_safe(g.name.value_or("?"));
  // The vendor's name before the model says nothing in a column this narrow.
  if (const auto* entry = backend::find_backend(g.backend); entry && !entry->words.vendor.empty())
    if (name.starts_with(entry->words.vendor + " "))
      name = name.substr(entry->words.vendor.size() + 1);
  l.add(pad_right(name, name_w, gl.ellipsis) + " ");
  if (g.error) {
    l.add("error: " + text::terminal_safe(*g.error), Role::Error);
    return l;
  }
  const auto m = s->memory_summary(g);
  add_memory(l, g, m, bar_w, gl);
  l.add(pad_left(pct(g.utilization_percent), 4) + " ");
  l.add(pad_left(g.temperature_celsius
                     ? fmt::format("{}{}", *g.temperature_celsius, settings_.unicode ? "°C" : "C")
                     : "-",
                 5) +
        " ");
  l.add(pad_left(g.power_watts ? fmt::format("{:.0f}W", *g.power_watts) : "-", 5) + " ");
  if (legend) add_memory_split(l, m, gl);
  if (g.processes_error) l.add(text::terminal_safe(*g.processes_error) + " ", Role::Warn);
  size_t room = l.width() < w ? w - l.width() : 0;
  size_t spark = std::min<size_t>(room > 1 ? room - 1 : 0, 60);
  // Memory and utilisation over the last minutes, side by side when both fit.
  if (trend_.has_utilization(g.index) && spark >= 2 * 4 + 10) {
    size_t each = (spark - 10) / 2;
    l.add("mem ", Role::Dim).add(trend_.sparkline(g.index, each, s->timestamp, gl), Role::Good);
    l.add(" util ", Role::Dim)
        .add(trend_.utilization_sparkline(g.index, each, s->timestamp, gl), Role::Good);
  } else if (spark >= 4) {
    l.add(trend_.sparkline(g.index, spark, s->timestamp, gl), Role::Good);
  }
  return l;
}

Line TopModel::instance_line(const core::Gpu& g, unsigned gi) const {
  const Glyphs& gl = glyphs(settings_.unicode);
  const size_t w = layout_.width;
  const core::GpuInstance* instance = core::find_instance(g, gi);
  size_t name_w = w >= 120 ? 16 : 10;
  size_t bar_w = w >= 160 ? 30 : w >= 120 ? 24 : 14;
  Line l;
  l.add(pad_right(std::string("  ") + gl.last, 3), Role::Dim);
  // The profile alone where there is one: the line sits under its GPU, which says what it is.
  std::string name =
      core::instance_place(g.index, gi) + " " +
      text::terminal_safe(instance->profile ? *instance->profile : core::instance_words(*instance));
  // A long name takes from the bar, so the figures stay under the GPU's.
  size_t extra =
      std::min(text::text_width(name) > name_w ? text::text_width(name) - name_w : 0, bar_w - 6);
  l.add(pad_right(name, name_w + extra, gl.ellipsis) + " ");
  // The instance's memory split as the GPU's: what the driver lists there, live and gone.
  core::Gpu part;
  part.memory = instance->memory;
  core::GpuMemorySummary m;
  for (const auto& r : snapshot_->rows)
    for (const auto& u : r.gpus)
      if (u.index == g.index && u.gpu_instance_id == gi)
        (r.process ? m.attributed_bytes : m.ghost_bytes) += u.used_bytes.value_or(0);
  add_memory(l, part, m, bar_w - extra, gl);
  return l;
}

void TopModel::compose_host(Frame& f) const {
  const core::Snapshot* s = snapshot_.get();
  Line host;
  host.add("host ", Role::Header);
  if (host_.load1)
    host.add("load ", Role::Dim)
        .add(fmt::format("{:.2f} {:.2f} {:.2f}  ", *host_.load1, host_.load5.value_or(0),
                         host_.load15.value_or(0)));
  if (host_.mem_total_bytes && host_.mem_available_bytes) {
    uint64_t used =
        *host_.mem_total_bytes - std::min(*host_.mem_total_bytes, *host_.mem_available_bytes);
    host.add("mem ", Role::Dim)
        .add(text::compact_bytes(used) + "/" + text::compact_bytes(*host_.mem_total_bytes) + "  ");
  }
  size_t ghosts = 0, stuck = 0;
  for (const auto& r : rows_) ghosts += r.ghost, stuck += r.stuck;
  host.add("procs ", Role::Dim).add(std::to_string(s->proc.processes.size()) + "  ");
  host.add("holders ", Role::Dim).add(std::to_string(rows_.size()) + "  ");
  if (ghosts) host.add(fmt::format("ghosts {}  ", ghosts), Role::Ghost);
  if (stuck) host.add(fmt::format("stuck {}  ", stuck), Role::Stuck);
  if (!s->complete()) host.add(text::terminal_safe(output::view_incomplete(*s)), Role::Warn);
  f.lines[layout_.host_y] = ellipsized(host, layout_.width, glyphs(settings_.unicode).ellipsis);
}

// Sampling trouble first, then messages, the filter, and what to do about ghosts.
void TopModel::compose_status(Frame& f) const {
  const core::Snapshot* s = snapshot_.get();
  Line st;
  add_sampling_status(st);
  if (!message_.empty()) st.add(message_ + "  ", message_role_);
  add_filter_status(st);
  for (const auto& n : output::stalled_job_notices(*s))
    st.add(fmt::format("job PID {} lost a rank; its others hold {}", n.launcher,
                       text::human_bytes(n.bytes)),
           Role::Ghost)
        .add("; a rank's detail explains (" + n.command + ")  ", Role::Dim);
  for (const auto& n : output::ghost_notices(*s)) {
    if (n.kind == output::GhostCase::Kept) {
      st.add(fmt::format("{} on GPU {} held by ghosts", text::human_bytes(n.bytes), n.gpu),
             Role::Ghost);
      st.add(settings_.readonly ? "  " : "; select the ghost, k frees it  ", Role::Dim);
    } else if (n.kind == output::GhostCase::Leaked) {
      st.add(fmt::format("{} on GPU {} leaked", text::human_bytes(n.bytes), n.gpu), Role::Ghost);
      st.add(": only a GPU reset frees it (" + n.command +
                 (n.blocked.empty() ? "" : "; " + n.blocked) + ")  ",
             Role::Dim);
    } else if (n.kind == output::GhostCase::Served) {
      st.add(fmt::format("{} on GPU {} held for gone clients by server {}",
                         text::human_bytes(n.bytes), n.gpu, fmt::join(n.servers, ",")),
             Role::Ghost);
      st.add(": " + n.command + " names the fix  ", Role::Dim);
    } else {
      st.add(fmt::format("{} on GPU {} listed for gone PIDs", text::human_bytes(n.bytes), n.gpu),
             Role::Ghost);
      st.add(": no holder visible (" + n.command + ")  ", Role::Dim);
    }
  }
  f.lines[layout_.status_y] = ellipsized(st, layout_.width, glyphs(settings_.unicode).ellipsis);
}

void TopModel::add_sampling_status(Line& st) const {
  // The library of the driver that does not answer, as its registry entry words it.
  std::string library = "driver";
  if (snapshot_)
    for (const auto& b : snapshot_->drivers.backends)
      if (b.error_code == core::BackendErrorCode::NotAnswering)
        if (const auto* entry = backend::find_backend(b.name);
            entry && !entry->words.library.empty()) {
          library = entry->words.library;
          break;
        }
  if (sampling_.driver_stuck)
    st.add(fmt::format("driver not answering for {}s", sampling_.driver_stuck->count()),
           Role::Error)
        .add(" — an " + library + " call is blocked (a wedged driver?); showing what /proc knows  ",
             Role::Dim);
  else if (sampling_.stalled)
    st.add(fmt::format("no new sample for {}s: collection is stuck (driver not answering?)  ",
                       sampling_.stalled->count()),
           Role::Error);
  if (sampling_.error) st.add(text::terminal_safe(*sampling_.error) + "  ", Role::Error);
  if (sampling_.from_daemon) st.add("from the gpureap daemon  ", Role::Dim);
}

// The filters and view modes in effect, and how many rows they leave.
void TopModel::add_filter_status(Line& st) const {
  const Glyphs& gl = glyphs(settings_.unicode);
  const Filter& flt = options_.filter;
  if (flt.active() || options_.tree || !tags_.empty()) {
    std::string parts;
    auto part = [&](const std::string& p) {
      parts += (parts.empty() ? "" : fmt::format(" {} ", gl.dot)) + p;
    };
    if (!flt.text.empty()) part("filter \"" + text::terminal_safe(flt.text) + "\"");
    if (flt.gpu) part(fmt::format("GPU {}", *flt.gpu));
    if (flt.user) part("user " + *flt.user);
    if (flt.anomalies_only) part("anomalies only");
    if (options_.tree) part("tree");
    if (!tags_.empty()) part(fmt::format("{} tagged", tags_.size()));
    part(fmt::format(
        "{} of {} rows",
        std::count_if(view_.begin(), view_.end(), [](const ViewRow& v) { return !v.row.context; }),
        rows_.size()));
    st.add(parts + "  ", Role::Key);
  }
}

void TopModel::compose_table(Frame& f) const {
  const Glyphs& gl = glyphs(settings_.unicode);
  Line head;
  head.add(std::string(kMarkWidth, ' '), Role::Header);
  for (const auto& c : columns_) {
    std::string title(column_title(c.column));
    if (options_.sort.column == c.column) title += options_.sort.descending ? gl.down : gl.up;
    head.add(
        (c.right ? pad_left(title, c.width, gl.ellipsis) : pad_right(title, c.width, gl.ellipsis)) +
            " ",
        Role::Header);
  }
  f.lines[layout_.header_y] = pad_line(head, layout_.width);

  if (view_.empty()) {
    std::string why = !snapshot_ ? "collecting…"
                      : options_.filter.active()
                          ? "No row matches the filter (c clears it)."
                          : "No process holds a GPU device file or is listed by the driver.";
    f.lines[layout_.table_y] = Line().add(" " + why, Role::Dim);
    return;
  }
  for (size_t i = 0; i < layout_.table_rows && scroll_ + i < view_.size(); ++i) {
    Line l = table_line(view_[scroll_ + i]);
    if (scroll_ + i == index_) l = pad_line(l, layout_.width).reversed();
    f.lines[layout_.table_y + i] = l;
  }
}

// One row: the tag mark, then each column's cell; the command last, under its tree prefix.
Line TopModel::table_line(const ViewRow& v) const {
  const Glyphs& gl = glyphs(settings_.unicode);
  const TopRow& r = v.row;
  const Role role = row_role(r);
  const Role plain = r.context || !r.actionable ? Role::Dim : Role::Normal;
  const bool tagged = tags_.count(r.pid) > 0;
  Line l;
  l.add(tagged ? "*" : " ", Role::Tagged);
  for (const auto& c : columns_) {
    if (c.column == Column::Command) {
      // Scrolled sideways (Left/Right), the tree drawing and the command move together.
      std::string prefix = text::columns(v.prefix, hscroll_, text_width(v.prefix));
      size_t skip = hscroll_ > text_width(v.prefix) ? hscroll_ - text_width(v.prefix) : 0;
      std::string command = text::columns(r.command, skip, text_width(r.command));
      l.add(fit(prefix, c.width, gl.ellipsis), Role::Dim);
      size_t pw = std::min(c.width, text_width(prefix));
      l.add(fit(command, c.width - pw, gl.ellipsis), plain);
      continue;
    }
    auto [text, cell] = table_cell(r, c.column, role, plain, tagged);
    l.add((c.right ? pad_left(text, c.width, gl.ellipsis) : pad_right(text, c.width, gl.ellipsis)) +
              " ",
          cell);
  }
  return l;
}

void TopModel::compose_detail(Frame& f) const {
  const Glyphs& gl = glyphs(settings_.unicode);
  if (layout_.detail_rows == 0) return;
  std::string bar;
  for (size_t i = 0; i < layout_.width; ++i) bar += gl.h;
  auto pid = selected();
  std::string title = pid ? fmt::format("{}{} PID {} {} Enter closes {} PgUp/PgDn scroll ", gl.h,
                                        gl.h, *pid, gl.dot, gl.dot)
                          : fmt::format("{}{} nothing selected ", gl.h, gl.h);
  Line t;
  t.add(title, Role::Border)
      .add(columns(bar, 0,
                   layout_.width > text_width(title) ? layout_.width - text_width(title) : 0),
           Role::Border);
  f.lines[layout_.detail_y] = t;
  if (!pid || !snapshot_) return;
  auto lines = detail_lines(evidence(), view_[index_], settings_.viewer, layout_.width);
  size_t rows = layout_.detail_rows - 1;
  size_t first = std::min(detail_scroll_, lines.size() > rows ? lines.size() - rows : 0);
  for (size_t i = 0; i < rows && first + i < lines.size(); ++i)
    f.lines[layout_.detail_y + 1 + i] = lines[first + i];
}

void TopModel::compose_footer(Frame& f) const {
  const size_t w = layout_.width;
  Line l;
  if (mode_ == Mode::FilterInput) {
    l.add("Filter: ", Role::Key).add(text::terminal_safe(filter_edit_)).add("_", Role::Key);
    l.add("   Enter keeps it · Esc clears it", Role::Dim);
    f.lines[layout_.footer_y] = l;
    return;
  }
  std::vector<std::pair<std::string, std::string>> keys = {
      {"q", "quit"},
      {"?", "help"},
      {"/", "filter"},
      {"Enter", "detail"},
      {"k", settings_.readonly ? "(read-only)" : "kill"},
      {"space", "tag"},
      {"t", "tree"},
      {"g", "gpu"},
      {"u", "user"},
      {"a", "anomalies"},
      {"c", "clear"},
      {"<>", "sort"},
      {"r", "reverse"}};
  std::string sort_keys;
  for (Column c : kAllColumns)
    sort_keys += (sort_keys.empty() ? "" : " ") + std::string(1, sort_key(c));
  keys.push_back({sort_keys, "sort by column"});
  std::string pos = view_.empty() ? "" : fmt::format(" {}/{}", index_ + 1, view_.size());
  size_t room = w > text_width(pos) ? w - text_width(pos) : 0;
  const Glyphs& gl = glyphs(settings_.unicode);
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto& [k, what] = keys[i];
    size_t need = text_width(k) + 1 + text_width(what) + (i + 1 < keys.size() ? 2 : 0);
    // The hint says when it is cut: "?" lists every key.
    size_t keep = i + 1 < keys.size() ? 1 : 0;
    if (l.width() + need + keep > room) {
      l.add(gl.ellipsis, Role::Dim);
      break;
    }
    l.add(k, Role::Key).add(" " + what + (i + 1 < keys.size() ? "  " : ""), Role::Dim);
  }
  if (l.width() < room) l.add(std::string(room - l.width(), ' '));
  l.add(pos, Role::Dim);
  f.lines[layout_.footer_y] = l;
}

}  // namespace gpureap::tui
