#include <charconv>

#include "procfs/parsers.h"

namespace gpureap::procfs {

std::optional<unsigned> parse_fdinfo_flags(std::string_view text) {
  // "pos:\t0\nflags:\t0100002\nmnt_id:\t27\n...": the key opens a line, the value is octal.
  constexpr std::string_view key = "flags:";
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    std::string_view line = text.substr(at, end == std::string_view::npos ? end : end - at);
    at = end == std::string_view::npos ? text.size() : end + 1;
    if (!line.starts_with(key)) continue;
    line.remove_prefix(key.size());
    while (!line.empty() && (line.front() == '\t' || line.front() == ' ')) line.remove_prefix(1);
    unsigned flags = 0;
    auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), flags, 8);
    if (ec != std::errc() || p == line.data()) return std::nullopt;
    for (; p != line.data() + line.size(); ++p)
      if (*p != ' ' && *p != '\t') return std::nullopt;  // not a number alone
    return flags;
  }
  return std::nullopt;
}

}  // namespace gpureap::procfs
