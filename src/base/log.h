#pragma once
// The daemon's log: one line per event on stderr, prefixed with the syslog priority ("<3>",
// "<4>", ...) so journald and `journalctl -p` keep the levels. Thread-safe; untrusted text in
// a message is made terminal-safe.
#include <optional>
#include <string>
#include <string_view>

namespace gpureap::base {

enum class LogLevel { Error = 3, Warning = 4, Notice = 5, Info = 6, Debug = 7 };

std::optional<LogLevel> log_level_from_string(std::string_view name);
const char* to_string(LogLevel level);

// Messages less important than this are dropped (default Info).
void set_log_level(LogLevel level);
LogLevel log_level();

void log(LogLevel level, std::string_view message);
inline void log_error(std::string_view m) {
  log(LogLevel::Error, m);
}
inline void log_warning(std::string_view m) {
  log(LogLevel::Warning, m);
}
inline void log_notice(std::string_view m) {
  log(LogLevel::Notice, m);
}
inline void log_info(std::string_view m) {
  log(LogLevel::Info, m);
}
inline void log_debug(std::string_view m) {
  log(LogLevel::Debug, m);
}

// The exact line log() writes (without the newline); exposed for tests.
std::string format_log_line(LogLevel level, std::string_view message);

}  // namespace gpureap::base
