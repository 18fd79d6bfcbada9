#include <gtest/gtest.h>

#include "daemon/log.h"

namespace gpureap::daemon {
namespace {

TEST(DaemonLog, LinesCarryTheSyslogPriority) {
  EXPECT_EQ(format_log_line(LogLevel::Error, "boom"), "<3>gpureap: boom");
  EXPECT_EQ(format_log_line(LogLevel::Warning, "hm"), "<4>gpureap: hm");
  EXPECT_EQ(format_log_line(LogLevel::Notice, "n"), "<5>gpureap: n");
  EXPECT_EQ(format_log_line(LogLevel::Info, "i"), "<6>gpureap: i");
  EXPECT_EQ(format_log_line(LogLevel::Debug, "d"), "<7>gpureap: d");
}

TEST(DaemonLog, AMessageIsOneLineWhateverItQuotes) {
  // A process name with a newline and an escape sequence cannot start a forged log entry.
  auto line = format_log_line(LogLevel::Info, "process \"evil\n<3>gpureap: fake\x1b[2J\"");
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
}

TEST(DaemonLog, Counts) {
  EXPECT_EQ(count(1, "GPU"), "1 GPU");
  EXPECT_EQ(count(0, "finding"), "0 findings");
  EXPECT_EQ(count(8, "GPU process"), "8 GPU processes");
  EXPECT_EQ(count(2, "cleanup policy"), "2 cleanup policies");
  EXPECT_EQ(count(2, "day"), "2 days");
}

TEST(DaemonLog, LevelNames) {
  EXPECT_EQ(log_level_from_string("warning"), LogLevel::Warning);
  EXPECT_EQ(log_level_from_string("debug"), LogLevel::Debug);
  EXPECT_FALSE(log_level_from_string("WARN"));
  EXPECT_STREQ(to_string(LogLevel::Notice), "notice");
}

}  // namespace
}  // namespace gpureap::daemon
