#pragma once
// Blanks cut from both ends of a value read from a file, a header or a line of text.
#include <string_view>

namespace gpureap::text {

// Every kind of blank: what a value read from /proc, sysfs or a saved file may be padded with.
inline constexpr std::string_view kWhitespace = " \t\n\v\f\r";

// `s` without the characters of `blanks` at either end; a view into `s`.
std::string_view trim(std::string_view s, std::string_view blanks = kWhitespace);

}  // namespace gpureap::text
