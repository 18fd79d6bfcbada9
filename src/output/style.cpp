#include "output/style.h"

#include <unistd.h>

#include <cstdlib>

namespace gpureap::output {

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
