#include "core/byte_size.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

namespace gpureap::core {
namespace {

Error bad(std::string_view text, const std::string& why) {
  return Error{"invalid size \"" + std::string(text) + "\": " + why,
               "write a number and a unit, e.g. \"512MiB\", \"1GiB\" or \"1.5GiB\""};
}

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

core::Result<uint64_t> parse_byte_size(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) return bad(text, "it is empty");
  size_t digits = 0;
  while (digits < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[digits])) || s[digits] == '.'))
    ++digits;
  if (digits == 0)
    return bad(text, s.front() == '-' ? "it is negative" : "it does not start with a number");
  double number = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + digits, number);
  if (ec != std::errc() || end != s.data() + digits) return bad(text, "the number is malformed");
  std::string_view unit = s.substr(digits);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  const std::string u = lower(unit);
  double scale = 0;
  if (u.empty() || u == "b")
    scale = 1;
  else if (u == "k" || u == "kb" || u == "kib")
    scale = 1024.0;
  else if (u == "m" || u == "mb" || u == "mib")
    scale = 1024.0 * 1024;
  else if (u == "g" || u == "gb" || u == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (u == "t" || u == "tb" || u == "tib")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return bad(text, "unknown unit \"" + std::string(unit) + "\" (use B, KiB, MiB, GiB or TiB)");
  double bytes = std::round(number * scale);
  if (!std::isfinite(bytes) || bytes >= 9.2e18) return bad(text, "it is too large");
  return static_cast<uint64_t>(bytes);
}

}  // namespace gpureap::core
