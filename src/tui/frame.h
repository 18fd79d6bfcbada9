#pragma once
// One screen of `top` as data: lines of styled spans. The view composes a Frame (pure, tested
// at any size); the curses layer only paints it. Roles name what a span is, not its colour:
// the terminal layer maps them to colours, or to attributes alone without colour.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpureap::tui {

enum class Role : uint8_t {
  Normal,
  Title,   // the top line
  Header,  // column titles
  Dim,     // context: tree ancestors, rows the user cannot act on, hints
  Ghost,   // memory held by something that should be gone
  Stuck,   // stopped or uninterruptible holders
  Warn,    // other anomalies, warnings
  Good,    // released, healthy
  Error,   // failures, "driver not answering"
  Key,     // a key name in the footer or help
  Tagged,  // a row tagged for an action
  BarAttributed,
  BarGhost,
  BarUnattributed,
  BarFree,
  Border,  // dialog frames
};

struct Span {
  std::string text;
  Role role = Role::Normal;
  bool reverse = false;  // the selected row's bar
};

struct Line {
  std::vector<Span> spans;

  Line& add(std::string text, Role role = Role::Normal);
  // Reverse video on every span (the selection bar); pad first to cover the whole width.
  Line& reversed();
  size_t width() const;
  std::string text() const;  // without roles
};

struct Frame {
  size_t width = 0;
  size_t height = 0;
  std::vector<Line> lines;  // at most height lines, each at most width columns

  std::string text() const;  // lines joined with '\n', trailing spaces kept
};

// The columns [from, to) of a line, roles kept.
Line slice(const Line& line, size_t from, size_t to);
// Cut to `width` columns.
Line fit_line(const Line& line, size_t width);
// Pads with spaces (in the last span's role and reverse) to exactly `width` columns; cuts when
// longer.
Line pad_line(const Line& line, size_t width);
// Paints `box` over the frame with its top-left corner at (x, y): each box line replaces
// the columns it covers.
void overlay(Frame& frame, size_t x, size_t y, const std::vector<Line>& box);

// Glyphs for UTF-8 terminals and their ASCII stand-ins for the rest.
struct Glyphs {
  const char* full;          // attributed memory
  const char* ghost;         // ghost memory
  const char* unattributed;  // used by nobody the driver lists
  const char* free;
  const char* branch;  // tree: a child with siblings after it
  const char* last;    // tree: the last child
  const char* pipe;    // tree: an ancestor with siblings after it
  const char* space;   // tree: an ancestor that was the last child
  const char* spark[8];
  const char* ellipsis;
  const char *h, *v, *tl, *tr, *bl, *br;  // box drawing
  const char *up, *down;                  // sort direction
  const char* dot;                        // separator
};
const Glyphs& glyphs(bool unicode);

}  // namespace gpureap::tui
