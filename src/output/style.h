#pragma once
// Terminal colour: on only when writing to a TTY, never with NO_COLOR or --no-color.
#include <string>
#include <string_view>

namespace gpureap::output {

enum class Color { None, Red, Yellow, Green, Dim, Bold };

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
