#pragma once
// Paragraphs wrapped to a terminal's width at word boundaries, for prose (doctor, the notes and
// footers under tables, top's dialogs): measured in display columns (wide characters take two),
// with ANSI escape sequences (colour) taking none, and a hanging indent so a bullet's
// continuation lines sit under its text.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::text {

// Display columns of `s` on a terminal: text_width() of what is left without its ANSI escape
// sequences (CSI "ESC [ ... final" and two-byte "ESC X").
size_t visible_width(std::string_view s);

// `text` (one paragraph: no newline) as lines of at most `width` columns, each ending in a
// newline: the first begins with `first`, every other with `rest`. Lines break only at spaces;
// a single word wider than a whole line is the one thing ever cut. `width` 0 means "do not
// wrap" (a pipe): first + text + "\n".
// A `command in backquotes` is kept on one line whenever it fits one.
std::string wrap_paragraph(std::string_view text, size_t width, std::string_view first,
                           std::string_view rest);

// The lines of wrap_paragraph(text, width, "", ""), without their newlines; none for width 0.
std::vector<std::string> wrap(std::string_view text, size_t width);

}  // namespace gpureap::text
