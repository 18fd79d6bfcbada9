#include "base/log.h"

#include <unistd.h>

#include <atomic>
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

std::string format_log_line(LogLevel level, std::string_view message) {
  // One event is one line: a newline in a message (or in a process name inside it) would
  // otherwise start a forged entry.
  return "<" + std::to_string(static_cast<int>(level)) +
         ">gpureap: " + text::terminal_safe(message);
}

void log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > g_level.load()) return;
  std::string line = format_log_line(level, message) + "\n";
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
