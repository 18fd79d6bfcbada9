#include "text/escape.h"

#include <cstdio>
#include <optional>

namespace gpureap::text {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not valid. Valid is RFC 3629's:
// no overlong form, no surrogate (U+D800..U+DFFF), nothing above U+10FFFF, which is what JSON
// parsers and Prometheus (a whole scrape is refused for one bad label value) accept.
size_t utf8_length(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  auto second = n > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
  if (n == 2 && c < 0xC2) return 0;                                     // overlong
  if (n == 3 && c == 0xE0 && second < 0xA0) return 0;                   // overlong
  if (n == 3 && c == 0xED && second >= 0xA0) return 0;                  // a surrogate
  if (n == 4 && c == 0xF0 && second < 0x90) return 0;                   // overlong
  if (n == 4 && (c > 0xF4 || (c == 0xF4 && second >= 0x90))) return 0;  // above U+10FFFF
  return n;
}

std::string hex_escape(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  return buf;
}

// The code point of the valid n-byte UTF-8 sequence at s[i] when it renders nothing but
// changes the text around it: the bidirectional controls (U+061C, U+200E, U+200F, U+202A..U+202E,
// U+2066..U+2069), zero-width characters (U+200B..U+200D, U+2060..U+2064, U+FEFF, U+180E), line
// and paragraph separators, the other invisible format characters (U+206A..U+206F,
// U+FFF9..U+FFFB) and the tag characters (U+E0001, U+E0020..U+E007F: text a reader cannot see).
std::optional<unsigned> invisible(std::string_view s, size_t i, size_t n) {
  if (n < 2) return std::nullopt;
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned cp = b(0) & (n == 2 ? 0x1Fu : n == 3 ? 0x0Fu : 0x07u);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (b(k) & 0x3Fu);
  bool hidden = cp == 0x061C || cp == 0x180E || (cp >= 0x200B && cp <= 0x200F) ||
                (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x2064) ||
                (cp >= 0x2066 && cp <= 0x206F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF ||
                (cp >= 0xFFF9 && cp <= 0xFFFB) || cp == 0xE0001 || (cp >= 0xE0020 && cp <= 0xE007F);
  return hidden ? std::optional<unsigned>(cp) : std::nullopt;
}

std::string escape(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = utf8_length(s, i);
    if (n == 0) {
      out += hex_escape(c);
      ++i;
      continue;
    }
    if (n == 1 && c == '\n' && keep_newlines) {
      out += '\n';
    } else if (n == 1 && (c < 0x20 || c == 0x7F)) {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : hex_escape(c);
    } else if (auto cp = invisible(s, i, n)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%04x}", *cp);
      out += buf;
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
      out += hex_escape(static_cast<unsigned char>(s[i + 1]));  // C1 control (U+0080..U+009F)
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string terminal_safe(std::string_view s) {
  return escape(s, false);
}
std::string terminal_safe_lines(std::string_view s) {
  return escape(s, true);
}

std::string utf8_valid(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string shell_quote(std::string_view w) {
  bool plain = !w.empty() && w.find_first_not_of(
                                 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789/._-+:@%,=") == std::string_view::npos;
  if (plain) return std::string(w);
  if (terminal_safe(w) == w) {
    std::string out = "'";
    for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }
  // What the terminal would show escaped, $'...' writes as escapes bash, zsh and ksh turn back
  // into the very bytes: the word stays one line and still names the file.
  std::string out = "$'";
  for (size_t i = 0; i < w.size();) {
    auto c = static_cast<unsigned char>(w[i]);
    size_t n = utf8_length(w, i);
    bool hidden = n == 0 || (n == 1 && (c < 0x20 || c == 0x7F)) || invisible(w, i, n) ||
                  (n == 2 && c == 0xC2 && static_cast<unsigned char>(w[i + 1]) < 0xA0);
    if (n == 0) n = 1;
    if (hidden && c == '\n') {
      out += "\\n";
    } else if (hidden && c == '\t') {
      out += "\\t";
    } else if (hidden) {
      for (size_t k = 0; k < n; ++k) out += hex_escape(static_cast<unsigned char>(w[i + k]));
    } else if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      out.append(w.substr(i, n));
    }
    i += n;
  }
  return out + "'";
}

std::string csv_field(std::string_view text) {
  // A spreadsheet reads a cell that starts with one of these as a formula (tab and CR it may
  // strip first): a leading ' makes it read the cell as text.
  bool formula =
      !text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos;
  std::string safe = (formula ? "'" : "") + terminal_safe(text);
  if (safe.find_first_of(",\"") == std::string::npos && safe.find(' ') != 0) return safe;
  std::string out = "\"";
  for (char c : safe) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string markup_safe(std::string_view text) {
  std::string out;
  for (char c : terminal_safe(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace gpureap::text
