#include "tui/terminal.h"

#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <curses.h>
#include <langinfo.h>
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "text/display_width.h"

namespace gpureap::tui {
namespace {

using text::ascii_only;
using text::columns;
using text::text_width;

volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int) {
  g_interrupted = 1;
}

enum Pair : short { kRed = 1, kYellow, kGreen, kCyan, kMagenta };

attr_t attr_for(Role role, bool color) {
  auto c = [color](short pair, attr_t extra = A_NORMAL) {
    return color ? (COLOR_PAIR(pair) | extra) : extra;
  };
  switch (role) {
    case Role::Normal:
      return A_NORMAL;
    case Role::Title:
      return A_REVERSE | A_BOLD;
    case Role::Header:
      return A_BOLD;
    case Role::Dim:
      return A_DIM;
    case Role::Ghost:
      return c(kRed, A_BOLD);
    case Role::Stuck:
      return color ? c(kMagenta, A_BOLD) : (A_BOLD | A_UNDERLINE);
    case Role::Warn:
      return c(kYellow);
    case Role::Good:
      return c(kGreen);
    case Role::Error:
      return c(kRed, A_BOLD);
    case Role::Key:
      return c(kCyan, A_BOLD);
    case Role::Tagged:
      return c(kYellow, A_BOLD);
    case Role::BarAttributed:
      return c(kGreen);
    case Role::BarGhost:
      return c(kRed, A_BOLD);
    case Role::BarUnattributed:
      return c(kYellow);
    case Role::BarFree:
      return A_DIM;
    case Role::Border:
      return c(kCyan);
  }
  return A_NORMAL;
}

std::terminate_handler g_previous_terminate = nullptr;

// An exception nobody caught (in any thread) ends the program: give the terminal back first.
[[noreturn]] void restore_then_terminate() {
  if (!isendwin()) endwin();
  if (g_previous_terminate) g_previous_terminate();
  std::abort();
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the wait for a key returns at once
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

}  // namespace

bool Terminal::interrupted() {
  return g_interrupted != 0;
}

core::Result<std::unique_ptr<Terminal>> Terminal::open(const TerminalOptions& options) {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO))
    return core::Error{
        "gpureap top needs a terminal",
        "for a pipe or a log use `gpureap ps --watch` (with --json: one snapshot per line)"};
  std::setlocale(LC_ALL, "");
  std::unique_ptr<Terminal> t(new Terminal());
  const char* codeset = nl_langinfo(CODESET);
  t->unicode_ = codeset && std::strcmp(codeset, "UTF-8") == 0;
  install_signal_handlers();
  // newterm, not initscr: an unknown TERM is an error to report, not an exit.
  t->screen_ = newterm(nullptr, stdout, stdin);
  if (!t->screen_)
    return core::Error{"cannot start the terminal UI: the terminal type is unknown",
                       "set TERM to one this system knows (e.g. TERM=xterm-256color)"};
  set_term(static_cast<SCREEN*>(t->screen_));
  t->open_ = true;
  g_previous_terminate = std::set_terminate(restore_then_terminate);
  cbreak();
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  intrflush(stdscr, FALSE);
  set_escdelay(25);
  curs_set(0);
  if (options.color && has_colors()) {
    start_color();
    use_default_colors();  // the terminal's own background and foreground
    init_pair(kRed, COLOR_RED, -1);
    init_pair(kYellow, COLOR_YELLOW, -1);
    init_pair(kGreen, COLOR_GREEN, -1);
    init_pair(kCyan, COLOR_CYAN, -1);
    init_pair(kMagenta, COLOR_MAGENTA, -1);
    t->color_ = true;
  }
  if (options.mouse) {
    mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED, nullptr);
    mouseinterval(0);
  }
  return t;
}

Terminal::~Terminal() {
  close();
}

void Terminal::close() {
  if (!open_) return;
  open_ = false;
  curs_set(1);
  endwin();
  delscreen(static_cast<SCREEN*>(screen_));
  screen_ = nullptr;
  std::set_terminate(g_previous_terminate);
}

void Terminal::draw(const Frame& frame) {
  erase();
  for (size_t y = 0; y < frame.lines.size() && y < frame.height; ++y) {
    move(static_cast<int>(y), 0);
    size_t col = 0;
    for (const auto& span : frame.lines[y].spans) {
      std::string text = unicode_ ? span.text : ascii_only(span.text);
      size_t w = text_width(text);
      if (col + w > frame.width) text = columns(text, 0, frame.width - col), w = text_width(text);
      attrset(attr_for(span.role, color_) | (span.reverse ? A_REVERSE : A_NORMAL));
      addstr(text.c_str());  // at the bottom-right cell this returns ERR after drawing: harmless
      col += w;
      if (col >= frame.width) break;
    }
  }
  attrset(A_NORMAL);
  wnoutrefresh(stdscr);
  doupdate();
}

namespace {

// A function or cursor key (or a mouse event) as get_wch reports it.
Key decode_key_code(wint_t ch) {
  switch (ch) {
    case KEY_UP:
      return Key::of(Key::Up);
    case KEY_DOWN:
      return Key::of(Key::Down);
    case KEY_LEFT:
      return Key::of(Key::Left);
    case KEY_RIGHT:
      return Key::of(Key::Right);
    case KEY_PPAGE:
      return Key::of(Key::PageUp);
    case KEY_NPAGE:
      return Key::of(Key::PageDown);
    case KEY_HOME:
      return Key::of(Key::Home);
    case KEY_END:
      return Key::of(Key::End);
    case KEY_ENTER:
      return Key::of(Key::Enter);
    case KEY_BACKSPACE:
      return Key::of(Key::Backspace);
    case KEY_RESIZE:
      return Key::of(Key::Resize);
    case KEY_F(1):
      return Key::of(Key::Help);
    case KEY_F(3):
      return Key::of(Key::Search);
    case KEY_F(4):
      return Key::of(Key::FilterKey);
    case KEY_F(5):
      return Key::of(Key::TreeKey);
    case KEY_F(6):
      return Key::of(Key::SortKey);
    case KEY_F(9):
      return Key::of(Key::Kill);
    case KEY_F(10):
      return Key::of(Key::Quit);
    case KEY_MOUSE: {
      MEVENT ev{};
      if (getmouse(&ev) != OK) return {};
      if (ev.bstate & BUTTON4_PRESSED) return Key::of(Key::WheelUp);
      if (ev.bstate & BUTTON5_PRESSED) return Key::of(Key::WheelDown);
      if (ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED))
        return {Key::Click, 0, static_cast<size_t>(ev.y)};
      return {};
    }
    default:
      return {};
  }
}

}  // namespace

Key Terminal::read_key(int timeout_ms) {
  timeout(timeout_ms);
  wint_t ch = 0;
  int rc = get_wch(&ch);
  if (rc == ERR) return {};
  if (rc == KEY_CODE_YES) return decode_key_code(ch);
  switch (ch) {
    case 3:
      return Key::of(Key::Interrupt);  // Ctrl-C when the terminal sends it as a key
    case 27:
      return Key::of(Key::Escape);
    case '\r':
    case '\n':
      return Key::of(Key::Enter);
    case 127:
    case 8:
      return Key::of(Key::Backspace);
    default:
      return Key::chr(static_cast<char32_t>(ch));
  }
}

std::pair<size_t, size_t> Terminal::size() const {
  int h = 0, w = 0;
  getmaxyx(stdscr, h, w);
  return {static_cast<size_t>(std::max(w, 0)), static_cast<size_t>(std::max(h, 0))};
}

}  // namespace gpureap::tui
