#pragma once
// Terminal colour: on only when writing to a TTY, never with NO_COLOR or --no-color.
#include <string>
#include <string_view>

namespace gpureap::output {

enum class Color { None, Red, Yellow, Green, Dim, Bold };

// Whether the locale's character set is UTF-8, read as setlocale(LC_CTYPE, "") would (the
// first set of LC_ALL, LC_CTYPE, LANG; none, "C" or "POSIX": ASCII) without changing the
// process's locale, which would change how numbers are parsed.
bool locale_speaks_utf8(const char* lc_all, const char* lc_ctype, const char* lang);
// The same for this process's environment.
bool locale_speaks_utf8();

class Style {
 public:
  explicit Style(bool enabled) : enabled_(enabled) {}
  // stdout is a TTY, NO_COLOR is unset or empty, and the user did not pass --no-color.
  static Style for_stdout(bool no_color_flag);

  bool enabled() const { return enabled_; }
  std::string paint(std::string_view text, Color c) const;

 private:
  bool enabled_;
};

}  // namespace gpureap::output
