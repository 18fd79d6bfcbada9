#include "base/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "text/escape.h"

namespace gpureap::base {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};
std::mutex g_write;

constexpr std::pair<LogLevel, const char*> kNames[] = {
    {LogLevel::Error, "error"}, {LogLevel::Warning, "warning"}, {LogLevel::Notice, "notice"},
    {LogLevel::Info, "info"},   {LogLevel::Debug, "debug"},
};

}  // namespace

std::optional<LogLevel> log_level_from_string(std::string_view name) {
  for (const auto& [level, text] : kNames)
    if (name == text) return level;
  return std::nullopt;
}

const char* to_string(LogLevel level) {
  for (const auto& [l, text] : kNames)
    if (l == level) return text;
  return "info";
}

void set_log_level(LogLevel level) {
  g_level = static_cast<int>(level);
}
LogLevel log_level() {
  return static_cast<LogLevel>(g_level.load());
}

namespace {

// A decimal number that fills `text` exactly, as systemd writes it.
bool parse_decimal(std::string_view text, unsigned long long& out) {
  if (text.empty() || text.size() > 20) return false;
  unsigned long long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    unsigned d = static_cast<unsigned>(c - '0');
    if (v > (~0ull - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

const char* level_word(LogLevel level) {
  switch (level) {
    case LogLevel::Error:
      return "error: ";
    case LogLevel::Warning:
      return "warning: ";
    case LogLevel::Debug:
      return "debug: ";
    case LogLevel::Notice:
    case LogLevel::Info:
      return "";
  }
  return "";
}

}  // namespace

bool is_journal_stream(int fd, const char* journal_stream) {
  if (!journal_stream) return false;
  std::string_view value(journal_stream);
  auto colon = value.find(':');
  if (colon == std::string_view::npos) return false;
  unsigned long long dev = 0, ino = 0;
  if (!parse_decimal(value.substr(0, colon), dev) || !parse_decimal(value.substr(colon + 1), ino))
    return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

bool stderr_is_journal() {
  int saved = errno;
  bool journal = is_journal_stream(STDERR_FILENO, std::getenv("JOURNAL_STREAM"));
  errno = saved;
  return journal;
}

std::string format_log_line(LogLevel level, std::string_view message, bool journal) {
  // One event is one line: a newline in a message (or in a process name inside it) would
  // otherwise start a forged entry.
  if (journal)
    return "<" + std::to_string(static_cast<int>(level)) +
           ">gpureap: " + text::terminal_safe(message);
  return std::string("gpureap: ") + level_word(level) + text::terminal_safe(message);
}

void log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > g_level.load()) return;
  std::string line = format_log_line(level, message, stderr_is_journal()) + "\n";
  std::lock_guard lock(g_write);
  // write(2) directly: no buffering to lose on a crash, and one call per line.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace gpureap::base
