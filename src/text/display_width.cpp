#include "text/display_width.h"

#include <algorithm>
#include <iterator>

#include "text/width_table.h"

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

// Whether c is in one of the sorted, disjoint ranges.
template <size_t N>
bool in_table(const WidthRange (&ranges)[N], char32_t c) {
  const auto* r =
      std::upper_bound(std::begin(ranges), std::end(ranges), c,
                       [](char32_t x, const WidthRange& range) { return x < range.first; });
  return r != std::begin(ranges) && c <= std::prev(r)->last;
}

}  // namespace

int codepoint_width(char32_t c) {
  if (c < 0x300) return 1;  // ASCII and Latin-1 (controls never reach a measure unescaped)
  if (in_table(kZeroWidth, c)) return 0;
  if (in_table(kDoubleWidth, c)) return 2;
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
