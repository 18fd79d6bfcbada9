#include <charconv>

#include "procfs/parsers.h"

namespace gpureap::procfs {
namespace {

template <class T>
std::optional<T> number(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p == s.data()) return std::nullopt;
  return v;
}

// Whitespace-separated numbers of one status line; empty when any is not a number.
template <class T>
std::vector<T> numbers(std::string_view s) {
  std::vector<T> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) {
      T v{};
      auto [p, ec] = std::from_chars(s.data() + i, s.data() + j, v);
      if (ec != std::errc() || p != s.data() + j) return {};
      out.push_back(v);
    }
    i = j;
  }
  return out;
}

}  // namespace

std::vector<std::string> parse_cmdline(std::string_view text) {
  std::vector<std::string> argv;
  while (!text.empty()) {
    size_t nul = text.find('\0');
    argv.emplace_back(text.substr(0, nul));
    if (nul == std::string_view::npos) break;
    text.remove_prefix(nul + 1);
  }
  return argv;
}

StatusFields parse_status(std::string_view text) {
  StatusFields out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon), val = line.substr(colon + 1);
    if (key == "Tgid") {
      out.tgid = number<pid_t>(val);
    } else if (key == "Uid") {
      auto ids = numbers<uid_t>(val);
      if (ids.size() >= 2) {
        out.uid = ids[0];
        out.euid = ids[1];
      }
    } else if (key == "NSpid") {
      out.ns_pids = numbers<pid_t>(val);
    } else if (key == "Threads") {
      out.threads = number<long>(val);
    } else if (key == "VmRSS") {
      if (auto kb = number<uint64_t>(val)) out.rss_bytes = *kb * 1024;
    }
  }
  return out;
}

std::optional<std::string> parse_wchan(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty() || text == "0") return std::nullopt;
  return std::string(text);
}

std::optional<long long> parse_boot_time(std::string_view text) {
  size_t pos = text.find("\nbtime ");
  if (pos == std::string_view::npos) return std::nullopt;
  return number<long long>(text.substr(pos + 7, text.find('\n', pos + 1) - pos - 7));
}

std::optional<unsigned> parse_char_major(std::string_view text, std::string_view driver) {
  // "Character devices:" section, lines "%3d name"; stop at "Block devices:".
  size_t start = text.find("Character devices:");
  if (start == std::string_view::npos) return std::nullopt;
  size_t end = text.find("Block devices:", start);
  std::string_view section = text.substr(start, end == std::string_view::npos ? end : end - start);
  while (!section.empty()) {
    size_t nl = section.find('\n');
    std::string_view line = section.substr(0, nl);
    section = nl == std::string_view::npos ? std::string_view{} : section.substr(nl + 1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || line.substr(sp + 1) != driver) continue;
    return number<unsigned>(line.substr(0, sp));
  }
  return std::nullopt;
}

}  // namespace gpureap::procfs
