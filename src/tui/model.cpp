#include "tui/model.h"

#include <algorithm>

#include "core/gpu_place.h"
#include "text/display_width.h"

namespace gpureap::tui {
namespace {

// A filter that steps through sorted `values`: none → the first → … → the last → none. None
// when there are no values.
template <class T>
std::optional<T> next_in_cycle(const std::vector<T>& values, const std::optional<T>& current) {
  if (values.empty()) return std::nullopt;
  if (!current) return values.front();
  auto it = std::upper_bound(values.begin(), values.end(), *current);
  if (it == values.end()) return std::nullopt;
  return *it;
}

bool printable(char32_t c) {
  return c >= 0x20 && c != 0x7F;
}

void append_utf8(std::string& s, char32_t c) {
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
}

void pop_utf8(std::string& s) {
  while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
  if (!s.empty()) s.pop_back();
}

}  // namespace

TopModel::TopModel(TopSettings settings) : settings_(settings) {
  options_.unicode = settings_.unicode;
  set_size(80, 24);
}

void TopModel::set_size(size_t width, size_t height) {
  layout_.width = width;
  layout_.height = height;
  relayout();
}

void TopModel::relayout() {
  size_t gpus = snapshot_ ? snapshot_->drivers.gpus.size() : 0;
  size_t instances = 0;
  if (snapshot_)
    for (const auto& g : snapshot_->drivers.gpus) instances += core::gpu_instance_ids(g).size();
  // GPU instances under their split GPUs when every line fits; else the GPUs' lines alone.
  layout_ = layout_screen(layout_.width, layout_.height, gpus + instances, detail_);
  instance_lines_ = instances > 0 && !layout_.more_gpus;
  if (instances > 0 && !instance_lines_)
    layout_ = layout_screen(layout_.width, layout_.height, gpus, detail_);
  columns_ = layout_columns(layout_.width, needs_of(view_));
  // Sorting by a column the screen no longer shows would order rows by something unseen.
  if (!shown(options_.sort.column)) {
    options_.sort = Sort{};  // memory, which every width shows
    if (snapshot_) view_ = make_view(*snapshot_, rows_, settings_.viewer, options_);
  }
  select_index(index_);
}

bool TopModel::shown(Column column) const {
  return std::any_of(columns_.begin(), columns_.end(),
                     [&](const ColumnSpec& c) { return c.column == column; });
}

void TopModel::scroll_sideways(int delta) {
  size_t widest = 0;
  for (const auto& v : view_)
    widest = std::max(widest, text::text_width(v.prefix) + text::text_width(v.row.command));
  size_t room = columns_.empty() ? 0 : columns_.back().width;
  size_t most = widest > room ? widest - room : 0;
  if (delta < 0)
    hscroll_ = hscroll_ > static_cast<size_t>(-delta) ? hscroll_ - static_cast<size_t>(-delta) : 0;
  else
    hscroll_ = std::min(most, hscroll_ + static_cast<size_t>(delta));
}

void TopModel::set_snapshot(std::shared_ptr<const core::Snapshot> snapshot) {
  if (!snapshot) return;
  previous_ = std::move(snapshot_);
  snapshot_ = std::move(snapshot);
  trend_.record(*snapshot_);
  rows_ = make_rows(*snapshot_, settings_.viewer);
  // A tagged process that is gone cannot be acted on any more.
  std::erase_if(tags_, [&](pid_t pid) { return !snapshot_->row(pid) && !snapshot_->find(pid); });
  rebuild();
}

void TopModel::set_evidence(std::shared_ptr<const doctor::Evidence> evidence) {
  evidence_ = std::move(evidence);
}

bool TopModel::wants_evidence() const {
  return detail_ && snapshot_ && (!evidence_ || evidence_->last != snapshot_);
}

doctor::Evidence TopModel::evidence() const {
  if (evidence_ && evidence_->last == snapshot_) return *evidence_;
  return {previous_ ? previous_ : snapshot_, snapshot_};
}

void TopModel::rebuild() {
  if (snapshot_)
    view_ = make_view(*snapshot_, rows_, settings_.viewer, options_);
  else
    view_.clear();
  if (selected_pid_) {
    for (size_t i = 0; i < view_.size(); ++i)
      if (view_[i].row.pid == *selected_pid_) {
        index_ = i;
        break;
      }
  }
  relayout();
}

void TopModel::select_index(size_t index) {
  if (view_.empty()) {
    index_ = 0;
    scroll_ = 0;
    return;
  }
  index_ = std::min(index, view_.size() - 1);
  selected_pid_ = view_[index_].row.pid;
  size_t rows = std::max<size_t>(1, layout_.table_rows);
  if (index_ < scroll_) scroll_ = index_;
  if (index_ >= scroll_ + rows) scroll_ = index_ + 1 - rows;
  // No empty space below the last row while rows are hidden above.
  if (view_.size() >= rows)
    scroll_ = std::min(scroll_, view_.size() - rows);
  else
    scroll_ = 0;
}

void TopModel::move(long delta) {
  if (view_.empty()) return;
  long target = static_cast<long>(index_) + delta;
  target = std::clamp<long>(target, 0, static_cast<long>(view_.size()) - 1);
  if (static_cast<size_t>(target) != index_) detail_scroll_ = 0;
  select_index(static_cast<size_t>(target));
}

std::optional<pid_t> TopModel::selected() const {
  if (view_.empty()) return std::nullopt;
  return view_[index_].row.pid;
}

void TopModel::set_message(std::string text, Role role) {
  message_ = std::move(text);
  message_role_ = role;
  message_at_ = std::chrono::steady_clock::now();
  message_sticky_ = false;
  ++message_serial_;
}

bool TopModel::expire_message(std::chrono::steady_clock::time_point now) {
  if (message_.empty() || message_sticky_ || now - message_at_ < kMessageFor) return false;
  message_.clear();
  return true;
}

void TopModel::cycle_gpu() {
  auto gpus = snapshot_ ? gpus_of(*snapshot_, rows_) : std::vector<unsigned>{};
  options_.filter.gpu = next_in_cycle(gpus, options_.filter.gpu);
  if (gpus.empty())
    set_message("no GPU to filter by", Role::Warn);
  else
    rebuild();
}

void TopModel::cycle_user() {
  auto users = users_of(rows_);
  options_.filter.user = next_in_cycle(users, options_.filter.user);
  if (users.empty())
    set_message("no user to filter by", Role::Warn);
  else
    rebuild();
}

void TopModel::sort_by(Column column) {
  if (!shown(column)) {
    set_message(std::string(column_title(column)) + " is hidden at this width: widen the terminal",
                Role::Warn);
    return;
  }
  if (options_.sort.column == column)
    options_.sort.descending = !options_.sort.descending;
  else
    options_.sort = {column, descending_by_default(column)};
  rebuild();
}

void TopModel::shift_sort(int delta) {
  constexpr int n = static_cast<int>(std::size(kAllColumns));
  int at = 0;
  for (int i = 0; i < n; ++i)
    if (kAllColumns[i] == options_.sort.column) at = i;
  // The next column the screen shows: never one hidden at this width.
  Column next = options_.sort.column;
  for (int step = 1; step <= n; ++step) {
    Column c = kAllColumns[((at + delta * step) % n + n) % n];
    if (shown(c)) {
      next = c;
      break;
    }
  }
  options_.sort = {next, descending_by_default(next)};
  rebuild();
}

Effect TopModel::handle(const Key& key) {
  if (key.kind == Key::None || key.kind == Key::Resize) return {};
  if (key.kind == Key::Interrupt) return {Effect::Quit};  // from any mode
  // A message has been read once a key is pressed: it goes, unless this key says something new.
  unsigned serial = message_serial_;
  Effect effect = dispatch(key);
  if (message_serial_ == serial && !message_sticky_) message_.clear();
  return effect;
}

Effect TopModel::dispatch(const Key& key) {
  switch (mode_) {
    case Mode::Table:
      return handle_table(key);
    case Mode::FilterInput:
      return handle_filter(key);
    case Mode::Help:
      return handle_help(key);
    case Mode::Plan:
    case Mode::Running:
    case Mode::Outcome:
      return handle_dialog(key);
  }
  return {};
}

Effect TopModel::handle_table(const Key& key) {
  bool quit_armed = quit_armed_;
  quit_armed_ = false;
  auto binding = binding_for(key);
  if (!binding) return {};
  switch (binding->action) {
    case Action::Up:
    case Action::Down:
    case Action::PageUp:
    case Action::PageDown:
    case Action::First:
    case Action::Last:
    case Action::Select:
    case Action::ScrollUp:
    case Action::ScrollDown:
      navigate(binding->action, key);
      return {};
    case Action::Quit:
      return {Effect::Quit};
    case Action::QuitAsking:
      if (kill_running() && !quit_armed) {
        quit_armed_ = true;
        set_message("a kill is still running: press q again to quit anyway", Role::Warn);
        return {};
      }
      return {Effect::Quit};
    case Action::Kill:
      return kill_selection();
    case Action::Detail:
    case Action::Back:
    case Action::Help:
    case Action::Filter:
    case Action::CycleGpu:
    case Action::CycleUser:
    case Action::AnomaliesOnly:
    case Action::ClearFilters:
    case Action::Tree:
    case Action::Reverse:
    case Action::SortPrevious:
    case Action::SortNext:
    case Action::SortBy:
    case Action::ScrollLeft:
    case Action::ScrollRight:
    case Action::Tag:
      change_view(*binding);
      return {};
  }
  return {};  // no action
}

void TopModel::navigate(Action action, const Key& key) {
  const size_t page = std::max<size_t>(1, layout_.table_rows);
  const size_t half_pane = layout_.detail_rows / 2;
  switch (action) {
    case Action::Up:
      return move(-1);
    case Action::Down:
      return move(1);
    case Action::PageUp:
      if (!detail_) return move(-static_cast<long>(page));
      detail_scroll_ = detail_scroll_ > half_pane ? detail_scroll_ - half_pane : 0;
      return;
    case Action::PageDown:
      if (!detail_) return move(static_cast<long>(page));
      detail_scroll_ += std::max<size_t>(1, half_pane);
      return;
    case Action::First:
      return move(-static_cast<long>(view_.size()));
    case Action::Last:
      return move(static_cast<long>(view_.size()));
    case Action::Select:
      if (key.y >= layout_.table_y && key.y < layout_.table_y + layout_.table_rows) {
        size_t i = scroll_ + (key.y - layout_.table_y);
        if (i < view_.size()) {
          detail_scroll_ = 0;
          select_index(i);
        }
      }
      return;
    case Action::ScrollUp:
      return move(-3);
    case Action::ScrollDown:
      return move(3);
    case Action::Detail:
    case Action::Back:
    case Action::Help:
    case Action::Quit:
    case Action::QuitAsking:
    case Action::Filter:
    case Action::CycleGpu:
    case Action::CycleUser:
    case Action::AnomaliesOnly:
    case Action::ClearFilters:
    case Action::Tree:
    case Action::Reverse:
    case Action::SortPrevious:
    case Action::SortNext:
    case Action::SortBy:
    case Action::ScrollLeft:
    case Action::ScrollRight:
    case Action::Tag:
    case Action::Kill:
      return;
  }
}

void TopModel::change_view(const Binding& binding) {
  switch (binding.action) {
    case Action::Detail:
      detail_ = !detail_;
      detail_scroll_ = 0;
      return relayout();
    case Action::Back:
      if (detail_) {
        detail_ = false;
        relayout();
      } else if (!tags_.empty()) {
        tags_.clear();
      } else {
        message_.clear();
      }
      return;
    case Action::Help:
      dialog_scroll_ = 0;
      mode_ = Mode::Help;
      return;
    case Action::Filter:
      mode_ = Mode::FilterInput;
      filter_edit_ = options_.filter.text;
      return;
    case Action::CycleGpu:
      return cycle_gpu();
    case Action::CycleUser:
      return cycle_user();
    case Action::AnomaliesOnly:
      options_.filter.anomalies_only = !options_.filter.anomalies_only;
      return rebuild();
    case Action::ClearFilters:
      options_.filter = Filter{};
      return rebuild();
    case Action::Tree:
      options_.tree = !options_.tree;
      return rebuild();
    case Action::Reverse:
      options_.sort.descending = !options_.sort.descending;
      return rebuild();
    case Action::SortPrevious:
      return shift_sort(-1);
    case Action::SortNext:
      return shift_sort(1);
    case Action::SortBy:
      if (binding.column) sort_by(*binding.column);
      return;
    case Action::ScrollLeft:
      return scroll_sideways(-8);
    case Action::ScrollRight:
      return scroll_sideways(8);
    case Action::Tag:
      if (auto pid = selected()) {
        if (!tags_.erase(*pid)) tags_.insert(*pid);
        move(1);
      }
      return;
    case Action::Up:
    case Action::Down:
    case Action::PageUp:
    case Action::PageDown:
    case Action::First:
    case Action::Last:
    case Action::Select:
    case Action::ScrollUp:
    case Action::ScrollDown:
    case Action::Quit:
    case Action::QuitAsking:
    case Action::Kill:
      return;
  }
}

Effect TopModel::kill_selection() {
  if (settings_.readonly) {
    set_message("read-only (--readonly): actions are disabled", Role::Warn);
    return {};
  }
  if (kill_running()) {
    set_message("a kill is already running; wait for its outcome", Role::Warn);
    return {};
  }
  std::vector<pid_t> pids(tags_.begin(), tags_.end());
  if (pids.empty())
    if (auto pid = selected()) pids.push_back(*pid);
  if (pids.empty()) {
    set_message("nothing selected to kill", Role::Warn);
    return {};
  }
  return {Effect::PlanKill, pids};
}

Effect TopModel::handle_filter(const Key& key) {
  switch (key.kind) {
    case Key::Enter:
      mode_ = Mode::Table;
      return {};
    case Key::Escape:
      filter_edit_.clear();
      options_.filter.text.clear();
      mode_ = Mode::Table;
      rebuild();
      return {};
    case Key::Backspace:
      pop_utf8(filter_edit_);
      break;
    case Key::Up:
      move(-1);
      return {};
    case Key::Down:
      move(1);
      return {};
    case Key::Char:
      if (!printable(key.ch) || filter_edit_.size() >= 200) return {};
      append_utf8(filter_edit_, key.ch);
      break;
    case Key::None:
    case Key::PageUp:
    case Key::PageDown:
    case Key::Home:
    case Key::End:
    case Key::Left:
    case Key::Right:
    case Key::Help:
    case Key::Search:
    case Key::FilterKey:
    case Key::TreeKey:
    case Key::SortKey:
    case Key::Kill:
    case Key::Quit:
    case Key::Interrupt:
    case Key::Click:
    case Key::WheelUp:
    case Key::WheelDown:
    case Key::Resize:
      return {};
  }
  // The table narrows while the user types.
  options_.filter.text = filter_edit_;
  rebuild();
  return {};
}

// Up/Down and PageUp/PageDown (and Home/End with `ends`) move the dialog's first line within
// [0, last]; false for any other key.
bool TopModel::scroll_dialog(const Key& key, size_t page, size_t last, bool ends) {
  switch (key.kind) {
    case Key::Up:
      dialog_scroll_ = dialog_scroll_ ? dialog_scroll_ - 1 : 0;
      return true;
    case Key::Down:
      dialog_scroll_ = std::min(dialog_scroll_ + 1, last);
      return true;
    case Key::PageUp:
      dialog_scroll_ = dialog_scroll_ > page ? dialog_scroll_ - page : 0;
      return true;
    case Key::PageDown:
      dialog_scroll_ = std::min(dialog_scroll_ + page, last);
      return true;
    case Key::Home:
      if (ends) dialog_scroll_ = 0;
      return ends;
    case Key::End:
      if (ends) dialog_scroll_ = last;
      return ends;
    case Key::None:
    case Key::Char:
    case Key::Left:
    case Key::Right:
    case Key::Enter:
    case Key::Escape:
    case Key::Backspace:
    case Key::Help:
    case Key::Search:
    case Key::FilterKey:
    case Key::TreeKey:
    case Key::SortKey:
    case Key::Kill:
    case Key::Quit:
    case Key::Interrupt:
    case Key::Click:
    case Key::WheelUp:
    case Key::WheelDown:
    case Key::Resize:
      return false;
  }
  return false;  // no key
}

// The help scrolls (a small terminal shows part of it, the legend last); any other key closes.
Effect TopModel::handle_help(const Key& key) {
  size_t rows = layout_.height > 4 ? layout_.height - 4 : 1;
  size_t lines = help_rows();
  size_t last = lines > rows ? lines - rows : 0;
  size_t page = std::max<size_t>(1, rows - 1);
  if (!scroll_dialog(key, page, last, true)) mode_ = Mode::Table;
  return {};
}

Effect TopModel::handle_dialog(const Key& key) {
  size_t page = std::max<size_t>(1, layout_.height / 2);
  size_t last = dialog_lines_.size() > 1 ? dialog_lines_.size() - 1 : 0;
  if (scroll_dialog(key, page, last, false)) return {};
  bool yes = key.kind == Key::Char && (key.ch == U'y' || key.ch == U'Y');
  // y: the reaper's escalation; t, i, 9: that one signal alone.
  std::optional<KillChoice> choice;
  if (yes) choice = KillChoice{SIGTERM, true};
  if (key.kind == Key::Char && key.ch == U't') choice = KillChoice{SIGTERM, false};
  if (key.kind == Key::Char && key.ch == U'i') choice = KillChoice{SIGINT, false};
  if (key.kind == Key::Char && (key.ch == U'9' || key.ch == U'K'))
    choice = KillChoice{SIGKILL, false};
  bool no = key.kind == Key::Escape || key.kind == Key::Quit ||
            (key.kind == Key::Char && (key.ch == U'n' || key.ch == U'N' || key.ch == U'q'));
  bool close = no || key.kind == Key::Enter || (key.kind == Key::Char && key.ch == U' ');
  switch (mode_) {
    case Mode::Plan:
      if (choice && dialog_signals_ > 0) {
        kill_choice_ = *choice;
        mode_ = Mode::Running;
        dialog_title_ = "Killing (" + kill_choice_.name() + ")";
        dialog_lines_ = {
            "Signalling, then waiting for the processes to exit and the memory to come back…"};
        dialog_scroll_ = 0;
        dialog_role_ = Role::Normal;
        return {Effect::ExecuteKill};
      }
      if (no || (close && dialog_signals_ == 0)) {
        mode_ = Mode::Table;
        if (dialog_signals_ > 0) set_message("Nothing was signalled.", Role::Dim);
      }
      return {};
    case Mode::Running:
      if (key.kind == Key::Escape) {
        running_hidden_ = true;
        mode_ = Mode::Table;
        set_message("the kill goes on in the background; its outcome will pop up", Role::Dim);
      } else if (key.kind == Key::Char && (key.ch == U'q' || key.ch == U'Q')) {
        mode_ = Mode::Table;
        running_hidden_ = true;
        return handle_table(key);
      }
      return {};
    case Mode::Outcome:
      if (close) mode_ = Mode::Table;
      return {};
    case Mode::Table:
    case Mode::FilterInput:
    case Mode::Help:
      return {};
  }
  return {};  // no mode
}

std::string KillChoice::name() const {
  const char* n = signal == SIGINT ? "SIGINT" : signal == SIGKILL ? "SIGKILL" : "SIGTERM";
  return std::string(n) + (escalate && signal != SIGKILL ? ", then SIGKILL" : "");
}

void TopModel::show_plan(std::vector<std::string> lines, size_t to_signal) {
  mode_ = Mode::Plan;
  dialog_signals_ = to_signal;
  dialog_lines_ = std::move(lines);
  dialog_scroll_ = 0;
  dialog_role_ = Role::Normal;
  dialog_title_ = to_signal > 0 ? "Kill " + std::to_string(to_signal) + " process" +
                                      (to_signal == 1 ? "" : "es") + "?"
                                : "Nothing to signal";
}

void TopModel::show_plan_error(std::string message) {
  show_plan({std::move(message)}, 0);
  dialog_title_ = "Cannot plan this kill";
  dialog_role_ = Role::Error;
}

void TopModel::kill_progress(std::string text) {
  if (mode_ == Mode::Running)
    dialog_lines_ = {std::move(text)};
  else if (running_hidden_) {
    set_message(std::move(text), Role::Dim);
    message_sticky_ = true;
  }
}

void TopModel::show_outcome(std::vector<std::string> lines, bool all_released) {
  running_hidden_ = false;
  quit_armed_ = false;
  mode_ = Mode::Outcome;
  dialog_lines_ = std::move(lines);
  dialog_scroll_ = 0;
  dialog_signals_ = 0;
  dialog_title_ = all_released ? "Done: memory released" : "Done, but not everything was reclaimed";
  dialog_role_ = all_released ? Role::Good : Role::Warn;
  tags_.clear();
  message_.clear();
  message_sticky_ = false;
}

}  // namespace gpureap::tui
