#include "output/style.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "text/display_width.h"

namespace gpureap::output {

bool locale_speaks_utf8(const char* lc_all, const char* lc_ctype, const char* lang) {
  const char* chosen = nullptr;
  for (const char* v : {lc_all, lc_ctype, lang})
    if (v && *v) {
      chosen = v;
      break;
    }
  if (!chosen) return false;
  std::string name = text::lower(chosen);
  return name.find("utf-8") != std::string::npos || name.find("utf8") != std::string::npos;
}

bool locale_speaks_utf8() {
  return locale_speaks_utf8(std::getenv("LC_ALL"), std::getenv("LC_CTYPE"), std::getenv("LANG"));
}

Style Style::for_stdout(bool no_color_flag) {
  const char* no_color = std::getenv("NO_COLOR");
  bool env_off = no_color && *no_color;
  return Style(!no_color_flag && !env_off && ::isatty(STDOUT_FILENO));
}

std::string Style::paint(std::string_view text, Color c) const {
  if (!enabled_ || c == Color::None || text.empty()) return std::string(text);
  const char* code = c == Color::Red      ? "\x1b[31m"
                     : c == Color::Yellow ? "\x1b[33m"
                     : c == Color::Green  ? "\x1b[32m"
                     : c == Color::Dim    ? "\x1b[2m"
                                          : "\x1b[1m";
  return std::string(code) + std::string(text) + "\x1b[0m";
}

}  // namespace gpureap::output
