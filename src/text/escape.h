#pragma once
// Untrusted text (process names, command lines, container ids) made safe for each sink.
#include <string>
#include <string_view>

namespace gpureap::text {

// For a terminal: control characters (C0, DEL, C1) and what is not UTF-8 (RFC 3629: no overlong
// form, surrogate or code point above U+10FFFF) become visible escapes (\n, \x1b, ...), so no
// escape sequence from a process name ever reaches the terminal; so do the invisible characters
// that change how text around them renders or hide text: the bidirectional controls (U+061C,
// U+200E, U+200F, embeddings and overrides U+202A-U+202E, isolates U+2066-U+2069), zero-width
// characters (U+200B-U+200D, U+2060-U+2064, U+FEFF, U+180E), U+2028, U+2029, the other invisible
// format characters (U+206A-U+206F, U+FFF9-U+FFFB) and the tag characters (U+E0001,
// U+E0020-U+E007F), written \u{202e}: a name never renders reversed nor carries a hidden text.
std::string terminal_safe(std::string_view text);
// The same for messages of several lines (errors that echo what a user typed, config
// problems): line breaks stay, everything else is escaped.
std::string terminal_safe_lines(std::string_view text);

// Valid UTF-8 (RFC 3629, as above) for JSON and Prometheus: invalid bytes become U+FFFD. (JSON
// escaping itself is the serializer's job.)
std::string utf8_valid(std::string_view text);

// For HTML and SVG text and attribute values: terminal_safe (no control or direction-changing
// character is drawn), then & < > " ' written as character references, so a name never opens
// an element or leaves an attribute.
std::string markup_safe(std::string_view text);

// A word for a POSIX shell: as it is when plainly safe, else single-quoted; a word with what
// terminal_safe would escape (a newline, a control or invisible character, invalid UTF-8) is
// written $'...' with those bytes as escapes, so a command that names it is one line and, in
// bash, zsh or ksh, still names it.
std::string shell_quote(std::string_view word);

// For a CSV text cell (names, command lines, users, containers, paths): quoted when needed,
// quotes doubled, control characters escaped, and a cell that a spreadsheet would read as a
// formula (starting with =, +, -, @, tab or CR) starts with ' instead. Numbers (PIDs, bytes:
// gpureap's are never negative) are written without it, so no number is ever prefixed.
std::string csv_field(std::string_view text);

}  // namespace gpureap::text
