#include "text/wrap.h"

#include <algorithm>
#include <vector>

#include "text/display_width.h"

namespace gpureap::text {
namespace {

// Bytes of the escape sequence at s[i] (s[i] is ESC); 1 when it is a lone ESC.
size_t escape_length(std::string_view s, size_t i) {
  if (i + 1 >= s.size()) return 1;
  if (s[i + 1] != '[') return 2;
  size_t j = i + 2;
  while (j < s.size() && !(s[j] >= 0x40 && s[j] <= 0x7E)) ++j;
  return j < s.size() ? j - i + 1 : s.size() - i;
}

// Bytes of the UTF-8 sequence that starts with byte c (1 for an invalid one).
size_t sequence_length(unsigned char c) {
  return c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
}

// The bytes of the longest prefix of `word` that fits `width` columns (at least one character,
// so a cut always makes progress); escape sequences go with the text before them.
size_t fitting_bytes(std::string_view word, size_t width) {
  size_t i = 0, w = 0;
  while (i < word.size()) {
    if (word[i] == '\x1b') {
      i += escape_length(word, i);
      continue;
    }
    size_t n = std::min(sequence_length(static_cast<unsigned char>(word[i])), word.size() - i);
    size_t cw = text_width(word.substr(i, n));
    if (w + cw > width && i > 0) break;
    w += cw;
    i += n;
  }
  return i;
}

}  // namespace

size_t visible_width(std::string_view s) {
  size_t w = 0, start = 0;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '\x1b') {
      w += text_width(s.substr(start, i - start));
      i += escape_length(s, i);
      start = i;
    } else {
      ++i;
    }
  }
  return w + text_width(s.substr(start));
}

namespace {

// The words of one paragraph: split at spaces, except that a `command in backquotes` (with
// what sticks to it) is one word, so a command to run is never split across lines when it fits
// one. One that fits no line is split at its own spaces after all.
std::vector<std::string_view> words_of(std::string_view text, size_t line_room) {
  std::vector<std::string_view> out;
  size_t start = 0;
  bool quoted = false;
  auto add = [&](std::string_view word) {
    if (word.empty()) return;
    if (word.find(' ') == std::string_view::npos || visible_width(word) <= line_room) {
      out.push_back(word);
      return;
    }
    for (size_t i = 0; i < word.size();) {
      size_t end = std::min(word.find(' ', i), word.size());
      if (end > i) out.push_back(word.substr(i, end - i));
      i = end + 1;
    }
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '`') quoted = !quoted;
    if (text[i] == ' ' && !quoted) {
      add(text.substr(start, i - start));
      start = i + 1;
    }
  }
  add(text.substr(start));
  return out;
}

}  // namespace

std::string wrap_paragraph(std::string_view text, size_t width, std::string_view first,
                           std::string_view rest) {
  std::string out(first);
  if (width == 0) return out.append(text) + "\n";
  size_t line_w = visible_width(first);
  size_t indent_w = visible_width(rest);
  bool line_empty = true;  // no word on the current line yet
  auto newline = [&] {
    out += "\n";
    out += rest;
    line_w = indent_w;
    line_empty = true;
  };
  for (std::string_view word : words_of(text, width > indent_w ? width - indent_w : 0)) {
    size_t ww = visible_width(word);
    size_t need = ww + (line_empty ? 0 : 1);
    if (line_w + need > width && !line_empty) newline();
    // Only a word that fits no line at all is cut.
    while (line_w + ww > width && ww > (width > indent_w ? width - indent_w : 0)) {
      size_t room = width > line_w ? width - line_w : 0;
      size_t bytes = fitting_bytes(word, room == 0 ? 1 : room);
      out.append(word.substr(0, bytes));
      word.remove_prefix(bytes);
      ww = visible_width(word);
      if (word.empty()) break;
      newline();
    }
    if (word.empty()) {
      line_empty = false;
      continue;
    }
    if (!line_empty) {
      out += ' ';
      ++line_w;
    }
    out.append(word);
    line_w += ww;
    line_empty = false;
  }
  return out + "\n";
}

std::vector<std::string> wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  if (width == 0) return lines;
  std::string wrapped = wrap_paragraph(text, width, "", "");
  for (size_t i = 0; i < wrapped.size();) {
    size_t end = wrapped.find('\n', i);
    lines.emplace_back(wrapped.substr(i, end - i));
    i = end + 1;
  }
  return lines;
}

}  // namespace gpureap::text
