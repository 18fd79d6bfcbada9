#pragma once
// `top`'s keys in the process table, as one table (key → action, as htop's Action.c): the
// model performs what a key's binding names, and the help screen is generated from the same
// table, so a key cannot work without being listed nor be listed without working.
#include <optional>
#include <string>
#include <vector>

#include "tui/key.h"
#include "tui/view.h"

namespace gpureap::tui {

enum class Action {
  Up,
  Down,
  PageUp,  // the detail pane when it is open, else the table
  PageDown,
  First,
  Last,
  Select,  // a click on a row
  ScrollUp,
  ScrollDown,
  Detail,  // open or close the detail pane
  Back,    // close the detail pane, else untag, else clear the message
  Help,
  Quit,        // at once
  QuitAsking,  // asks again while a kill runs
  Filter,
  CycleGpu,
  CycleUser,
  AnomaliesOnly,
  ClearFilters,
  Tree,
  Reverse,
  SortPrevious,
  SortNext,
  SortBy,
  ScrollLeft,  // the table's text, horizontally
  ScrollRight,
  Tag,
  Kill,
};

// A key as the table matches it: its kind, and the character for Key::Char.
struct KeyChord {
  Key::Kind kind = Key::None;
  char32_t ch = 0;

  bool matches(const Key& key) const;
  std::string name() const;  // as the help screen shows it
};

struct Binding {
  KeyChord key;
  Action action;
  std::optional<Column> column;  // SortBy
};

// One line of the help screen: what a group of bindings does.
struct BindingGroup {
  std::string what;
  std::vector<Binding> bindings;
  std::optional<std::string> what_readonly;  // instead of `what` under --readonly
};

// Every binding of the process table, grouped as the help screen shows them.
const std::vector<BindingGroup>& table_bindings();

// The binding `key` triggers in the process table; empty when it is unbound.
std::optional<Binding> binding_for(const Key& key);

// The group's keys, as the help screen lists them.
std::string keys_label(const BindingGroup& group);

}  // namespace gpureap::tui
