#pragma once
// The daemon's log: one line per event on stderr. When stderr is the journal (systemd names its
// stream in $JOURNAL_STREAM), each line starts with the syslog priority ("<3>", "<4>", ...) so
// journald and `journalctl -p` keep the levels; on a terminal or into a file it reads
// "gpureap: warning: ..." instead. Thread-safe; untrusted text in a message is made
// terminal-safe.
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

// The exact line log() writes (without the newline): with the priority prefix for the journal,
// else with the level in words (errors, warnings and debug messages).
std::string format_log_line(LogLevel level, std::string_view message, bool journal);

// Whether `fd` is the stream systemd's journal reads, as $JOURNAL_STREAM ("DEVICE:INODE", both
// decimal, `journal_stream` here) names it: systemd sets the variable for a service whose
// stdout or stderr it connects to the journal, and documents comparing it with fstat(2) of the
// stream, since a child that inherits the variable may have had its stderr redirected.
bool is_journal_stream(int fd, const char* journal_stream);
// is_journal_stream(STDERR_FILENO, getenv("JOURNAL_STREAM")), decided on each call (cheap; a
// test or a program may redirect stderr).
bool stderr_is_journal();

}  // namespace gpureap::base
