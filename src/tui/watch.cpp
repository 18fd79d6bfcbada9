#include "tui/watch.h"

#include "text/display_width.h"

namespace gpureap::tui {

using text::text_width;

std::string cut_ansi(std::string_view line, size_t width) {
  std::string out;
  size_t col = 0;
  bool styled = false, cut = false;
  for (size_t i = 0; i < line.size();) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      size_t j = i + 2;
      while (j < line.size() && !(line[j] >= 0x40 && line[j] <= 0x7E)) ++j;
      size_t end = std::min(line.size(), j + 1);
      std::string_view seq = line.substr(i, end - i);
      out.append(seq);
      styled = seq != "\x1b[0m" && seq != "\x1b[m";
      i = end;
      continue;
    }
    size_t n = 1;
    auto c = static_cast<unsigned char>(line[i]);
    if (c >= 0xC0) {
      while (i + n < line.size() && (static_cast<unsigned char>(line[i + n]) & 0xC0) == 0x80) ++n;
    }
    size_t w = text_width(line.substr(i, n));
    if (col + w > width) {
      cut = true;
      break;
    }
    out.append(line.substr(i, n));
    col += w;
    i += n;
  }
  if (cut && styled) out += "\x1b[0m";
  return out;
}

std::string repaint(std::string_view text, size_t width, size_t height) {
  std::string out = "\x1b[H";
  size_t max_lines = height > 1 ? height - 1 : 1;
  size_t lines = 0, pos = 0;
  while (pos < text.size() && lines < max_lines) {
    size_t eol = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    out += cut_ansi(line, width);
    out += "\x1b[K\r\n";
    ++lines;
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  out += "\x1b[J";
  return out;
}

}  // namespace gpureap::tui
