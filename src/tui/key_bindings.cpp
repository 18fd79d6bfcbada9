#include "tui/key_bindings.h"

namespace gpureap::tui {
namespace {

KeyChord chr(char32_t c) {
  return {Key::Char, c};
}

KeyChord of(Key::Kind kind) {
  return {kind, 0};
}

std::vector<BindingGroup> make_table() {
  using A = Action;
  std::vector<Binding> sorts;
  for (Column c : kAllColumns)
    sorts.push_back({chr(static_cast<char32_t>(sort_key(c))), A::SortBy, c});
  return {
      {"move the selection",
       {{of(Key::Up), A::Up},
        {of(Key::Down), A::Down},
        {of(Key::PageUp), A::PageUp},
        {of(Key::PageDown), A::PageDown},
        {of(Key::Home), A::First},
        {of(Key::End), A::Last}}},
      {"the mouse selects and scrolls",
       {{of(Key::Click), A::Select},
        {of(Key::WheelUp), A::ScrollUp},
        {of(Key::WheelDown), A::ScrollDown}}},
      {"detail pane: the process, then doctor's evidence and remedies",
       {{of(Key::Enter), A::Detail}}},
      {"search: filter by text (pid, user, state, command, container, anomaly)",
       {{chr(U'/'), A::Filter}, {of(Key::Search), A::Filter}, {of(Key::FilterKey), A::Filter}}},
      {"filter by GPU / by user (again: the next one, then all)",
       {{chr(U'g'), A::CycleGpu}, {chr(U'u'), A::CycleUser}}},
      {"only rows with anomalies", {{chr(U'a'), A::AnomaliesOnly}}},
      {"clear every filter", {{chr(U'c'), A::ClearFilters}}},
      {"tree: holders under their parents, workers under the gone PID they keep",
       {{chr(U't'), A::Tree}, {of(Key::TreeKey), A::Tree}}},
      {"sort by PID, user, GPU, memory, SM%, CPU%, RSS, TIME, state, age, container, anomalies, "
       "command",
       sorts},
      {"previous / next sort column, reverse the order",
       {{chr(U'<'), A::SortPrevious},
        {chr(U','), A::SortPrevious},
        {chr(U'>'), A::SortNext},
        {chr(U'.'), A::SortNext},
        {of(Key::SortKey), A::SortNext},
        {chr(U'r'), A::Reverse}}},
      {"scroll the table left / right (long commands)",
       {{of(Key::Left), A::ScrollLeft}, {of(Key::Right), A::ScrollRight}}},
      {"tag the row (k then acts on every tagged row)", {{chr(U' '), A::Tag}}},
      {"kill the selection or the tagged rows, through the reaper",
       {{chr(U'k'), A::Kill}, {of(Key::Kill), A::Kill}},
       "kill: disabled (--readonly)"},
      {"close the detail pane, untag everything", {{of(Key::Escape), A::Back}}},
      {"this help", {{chr(U'?'), A::Help}, {chr(U'h'), A::Help}, {of(Key::Help), A::Help}}},
      {"quit",
       {{chr(U'q'), A::QuitAsking},
        {chr(U'Q'), A::QuitAsking},
        {of(Key::Interrupt), A::Quit},
        {of(Key::Quit), A::Quit}}},
  };
}

}  // namespace

bool KeyChord::matches(const Key& key) const {
  return key.kind == kind && (kind != Key::Char || key.ch == ch);
}

std::string KeyChord::name() const {
  switch (kind) {
    case Key::Char:
      if (ch == U' ') return "space";
      return ch < 0x80 ? std::string(1, static_cast<char>(ch)) : "?";
    case Key::Up:
      return "Up";
    case Key::Down:
      return "Down";
    case Key::PageUp:
      return "PgUp";
    case Key::PageDown:
      return "PgDn";
    case Key::Home:
      return "Home";
    case Key::End:
      return "End";
    case Key::Left:
      return "Left";
    case Key::Right:
      return "Right";
    case Key::Enter:
      return "Enter";
    case Key::Escape:
      return "Esc";
    case Key::Backspace:
      return "Backspace";
    case Key::Help:
      return "F1";
    case Key::Search:
      return "F3";
    case Key::FilterKey:
      return "F4";
    case Key::TreeKey:
      return "F5";
    case Key::SortKey:
      return "F6";
    case Key::Kill:
      return "F9";
    case Key::Quit:
      return "F10";
    case Key::Interrupt:
      return "Ctrl-C";
    case Key::Click:
      return "click";
    case Key::WheelUp:
      return "wheel-up";
    case Key::WheelDown:
      return "wheel-down";
    case Key::None:
    case Key::Resize:
      break;
  }
  return "";
}

const std::vector<BindingGroup>& table_bindings() {
  static const std::vector<BindingGroup> table = make_table();
  return table;
}

std::optional<Binding> binding_for(const Key& key) {
  for (const auto& group : table_bindings())
    for (const auto& b : group.bindings)
      if (b.key.matches(key)) return b;
  return std::nullopt;
}

std::string keys_label(const BindingGroup& group) {
  std::string out;
  for (const auto& b : group.bindings) out += (out.empty() ? "" : " ") + b.key.name();
  return out;
}

}  // namespace gpureap::tui
