#pragma once
// Terminal text measured in columns, not bytes: UTF-8 decoding, East Asian wide and fullwidth
// characters, emoji among them (two columns), and combining and zero-width ones (none), as the C
// library's wcwidth() counts them (`width_table.h`, from Unicode's data), cutting and padding to a
// width. The one measure of every table (`ps`, `kill`, `audit`, `policy`) and of `top`, so a CJK
// name never shifts the columns after it; pure, so every layout can be tested without a terminal.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::text {

// Columns a code point takes on a terminal: 0 (combining), 1, or 2 (wide).
int codepoint_width(char32_t c);
// Display columns of UTF-8 text; an invalid byte counts as one column.
size_t text_width(std::string_view s);
// The longest prefix that fits in `width` columns; when cut, the last column is `ellipsis`.
std::string fit(std::string_view s, size_t width, std::string_view ellipsis = "…");
// fit() then pad with spaces to exactly `width` columns (left- or right-aligned).
std::string pad_right(std::string_view s, size_t width, std::string_view ellipsis = "…");
std::string pad_left(std::string_view s, size_t width, std::string_view ellipsis = "…");
// The columns [from, to) of s; a wide character cut in half becomes a space.
std::string columns(std::string_view s, size_t from, size_t to);
// For terminals without UTF-8: "…" becomes "~", "·" and dashes "-", "•" "*", "→" ">", any other
// non-ASCII character "?" (two for a wide one: the columns stay).
std::string ascii_only(std::string_view s);
// Lower-case ASCII (filters match case-insensitively).
std::string lower(std::string_view s);

}  // namespace gpureap::text
