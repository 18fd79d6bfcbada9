#pragma once
// A key (or mouse event) as the terminal layer decodes it for `top`.
#include <cstddef>

namespace gpureap::tui {

struct Key {
  enum Kind {
    None,
    Char,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Left,
    Right,
    Enter,
    Escape,
    Backspace,
    Help,       // F1
    Search,     // F3
    FilterKey,  // F4
    TreeKey,    // F5
    SortKey,    // F6
    Kill,       // F9
    Quit,       // F10
    Interrupt,  // Ctrl-C
    Click,      // mouse button 1 at row y
    WheelUp,
    WheelDown,
    Resize,
  };
  Kind kind = None;
  char32_t ch = 0;
  size_t y = 0;

  static Key chr(char32_t c) { return {Char, c, 0}; }
  static Key of(Kind k) { return {k, 0, 0}; }
};

}  // namespace gpureap::tui
