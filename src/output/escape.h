#pragma once
// Untrusted text (process names, command lines, container ids) made safe for each sink.
#include <string>
#include <string_view>

namespace gpureap::output {

// For a terminal: control characters (C0, DEL, C1) and invalid UTF-8 become visible escapes
// (\n, \x1b, ...), so no escape sequence from a process name ever reaches the terminal.
std::string terminal_safe(std::string_view text);

// Valid UTF-8 for JSON: invalid bytes become U+FFFD. (JSON escaping itself is the
// serializer's job.)
std::string utf8_valid(std::string_view text);

// For CSV: quoted when needed, quotes doubled, control characters escaped.
std::string csv_field(std::string_view text);

}  // namespace gpureap::output
