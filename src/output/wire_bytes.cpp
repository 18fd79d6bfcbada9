// The wire form of a byte string (snapshot_wire.h): valid UTF-8 as itself, any other bytes as
// {"hex": "..."}, so that any bytes round-trip and every wire document is valid UTF-8.
#include <optional>
#include <string>

#include "output/snapshot_wire.h"

namespace gpureap::output {
namespace {

// Strict UTF-8 as RFC 3629 defines it (no overlong forms, no surrogates, nothing past
// U+10FFFF): exactly what nlohmann::json accepts when it dumps or parses a string.
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
      return false;
    }
    if (n - i < len) return false;
    const auto second = static_cast<unsigned char>(s[i + 1]);
    if (second < lo || second > hi) return false;
    for (size_t k = 2; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

constexpr char kDigits[] = "0123456789abcdef";

std::string hex_of(std::string_view bytes) {
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    hex += kDigits[b >> 4];
    hex += kDigits[b & 0xF];
  }
  return hex;
}

}  // namespace

void write_bytes(std::string& out, std::string_view bytes) {
  if (!valid_utf8(bytes)) {
    out += R"({"hex":")";
    out += hex_of(bytes);
    out += R"("})";
    return;
  }
  // A JSON string of valid UTF-8 as RFC 8259 writes it: the quote, the backslash and the control
  // characters escaped, every other byte as it is.
  out += '"';
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (b < 0x20) {
          out += "\\u00";
          out += kDigits[b >> 4];
          out += kDigits[b & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::optional<std::string> bytes_from_hex(std::string_view text) {
  if (text.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    const int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>((hi << 4) | lo);
  }
  return out;
}

}  // namespace gpureap::output
