#pragma once
// `gpureap ps --watch`: the bytes that repaint a terminal in place. Each frame moves the
// cursor home and rewrites every line followed by clear-to-end-of-line, then clears below:
// nothing is blanked first, so nothing flickers. Pure, tested without a terminal.
#include <cstddef>
#include <string>
#include <string_view>

namespace gpureap::tui {

// The first `width` columns of a line that may hold SGR colour sequences (kept, not counted);
// colour is reset when the cut leaves one open.
std::string cut_ansi(std::string_view line, size_t width);
// One frame: cursor home, the lines of `text` (each cut to `width`, at most `height - 1` of
// them so the terminal never scrolls), each followed by erase-to-end-of-line, then erase below.
std::string repaint(std::string_view text, size_t width, size_t height);

inline constexpr const char* kClearScreen = "\x1b[H\x1b[2J";
inline constexpr const char* kHideCursor = "\x1b[?25l";
inline constexpr const char* kShowCursor = "\x1b[?25h";

}  // namespace gpureap::tui
