#pragma once
// The ncurses layer of `top`: paints Frames and reads Keys, nothing else. The screen is erased
// and redrawn into curses' virtual screen and sent with one refresh, so only the cells that
// changed reach the terminal (no flicker). Destroying the Terminal restores the terminal; so
// do SIGINT, SIGTERM and SIGHUP, which only set a flag the loop reads.
#include <csignal>
#include <memory>
#include <utility>

#include "core/result.h"
#include "tui/frame.h"
#include "tui/model.h"

namespace gpureap::tui {

struct TerminalOptions {
  bool color = true;  // colours from the terminal's own palette (use_default_colors)
  bool mouse = true;
};

class Terminal {
 public:
  // Fails when stdin or stdout is not a terminal, or curses cannot start.
  static core::Result<std::unique_ptr<Terminal>> open(const TerminalOptions& options);
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  ~Terminal();

  // Restores the terminal now (idempotent).
  void close();
  void draw(const Frame& frame);
  // Waits up to timeout_ms for a key; Key::None when there was none.
  Key read_key(int timeout_ms);
  std::pair<size_t, size_t> size() const;  // columns, lines
  bool unicode() const { return unicode_; }
  // SIGINT, SIGTERM or SIGHUP arrived.
  static bool interrupted();

 private:
  Terminal() = default;
  void* screen_ = nullptr;  // curses' SCREEN, kept out of this header
  bool open_ = false;
  bool unicode_ = true;
  bool color_ = false;
};

}  // namespace gpureap::tui
