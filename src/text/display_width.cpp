#include "text/display_width.h"

#include <algorithm>

namespace gpureap::text {
namespace {

// Decodes the UTF-8 sequence at s[i]: its code point and byte length (1 for an invalid byte,
// reported as U+FFFD).
std::pair<char32_t, size_t> decode(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return {0xFFFD, 1};
  char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return {0xFFFD, 1};
    cp = (cp << 6) | (cc & 0x3F);
  }
  return {cp, n};
}

struct Range {
  char32_t first, last;
};

bool in(const Range* begin, const Range* end, char32_t c) {
  return std::any_of(begin, end, [c](const Range& r) { return c >= r.first && c <= r.last; });
}

}  // namespace

int codepoint_width(char32_t c) {
  static constexpr Range kZero[] = {{0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD},
                                    {0x0610, 0x061A}, {0x064B, 0x065F}, {0x200B, 0x200F},
                                    {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}};
  static constexpr Range kWide[] = {
      {0x1100, 0x115F}, {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},  {0x4E00, 0x9FFF},
      {0xA000, 0xA4CF}, {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE30, 0xFE4F},  {0xFF00, 0xFF60},
      {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F}, {0x1F900, 0x1F9FF}, {0x20000, 0x3FFFD}};
  if (in(std::begin(kZero), std::end(kZero), c)) return 0;
  if (in(std::begin(kWide), std::end(kWide), c)) return 2;
  return 1;
}

size_t text_width(std::string_view s) {
  size_t w = 0;
  for (size_t i = 0; i < s.size();) {
    auto [cp, n] = decode(s, i);
    w += static_cast<size_t>(codepoint_width(cp));
    i += n;
  }
  return w;
}

std::string fit(std::string_view s, size_t width, std::string_view ellipsis) {
  if (text_width(s) <= width) return std::string(s);
  size_t ew = text_width(ellipsis);
  if (width < ew) return std::string(width, ' ');
  std::string out;
  size_t w = 0;
  for (size_t i = 0; i < s.size();) {
    auto [cp, n] = decode(s, i);
    size_t cw = static_cast<size_t>(codepoint_width(cp));
    if (w + cw + ew > width) break;
    out.append(s.substr(i, n));
    w += cw;
    i += n;
  }
  out.append(ellipsis);
  w += ew;
  if (w < width) out.append(width - w, ' ');  // a wide character did not fit
  return out;
}

std::string pad_right(std::string_view s, size_t width, std::string_view ellipsis) {
  std::string out = fit(s, width, ellipsis);
  size_t w = text_width(out);
  if (w < width) out.append(width - w, ' ');
  return out;
}

std::string pad_left(std::string_view s, size_t width, std::string_view ellipsis) {
  std::string out = fit(s, width, ellipsis);
  size_t w = text_width(out);
  return w < width ? std::string(width - w, ' ') + out : out;
}

std::string columns(std::string_view s, size_t from, size_t to) {
  std::string out;
  size_t col = 0;
  for (size_t i = 0; i < s.size() && col < to;) {
    auto [cp, n] = decode(s, i);
    size_t cw = static_cast<size_t>(codepoint_width(cp));
    if (col >= from && col + cw <= to)
      out.append(s.substr(i, n));
    else if (col + cw > from && cw > 0)
      out.append(std::min(col + cw, to) - std::max(col, from), ' ');
    col += cw;
    i += n;
  }
  return out;
}

std::string ascii_only(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto [cp, n] = decode(s, i);
    if (cp < 0x80)
      out += static_cast<char>(cp);
    else if (cp == 0x2026)
      out += '~';
    else if (cp == 0xB7 || cp == 0x2014 || cp == 0x2013 || cp == 0x2500)
      out += '-';  // · — – ─
    else if (cp == 0x2022)
      out += '*';  // •
    else if (cp == 0x2192)
      out += '>';  // →
    else if (codepoint_width(cp) == 2)
      out += "??";
    else if (codepoint_width(cp) == 1)
      out += '?';
    i += n;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace gpureap::text
