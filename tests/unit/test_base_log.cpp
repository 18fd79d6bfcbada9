#include <gtest/gtest.h>

#include "base/log.h"

namespace gpureap::base {
namespace {

TEST(BaseLog, LinesCarryTheSyslogPriority) {
  EXPECT_EQ(format_log_line(LogLevel::Error, "boom"), "<3>gpureap: boom");
  EXPECT_EQ(format_log_line(LogLevel::Warning, "hm"), "<4>gpureap: hm");
  EXPECT_EQ(format_log_line(LogLevel::Notice, "n"), "<5>gpureap: n");
  EXPECT_EQ(format_log_line(LogLevel::Info, "i"), "<6>gpureap: i");
  EXPECT_EQ(format_log_line(LogLevel::Debug, "d"), "<7>gpureap: d");
}

TEST(BaseLog, AMessageIsOneLineWhateverItQuotes) {
  // A process name with a newline and an escape sequence cannot start a forged log entry.
  auto line = format_log_line(LogLevel::Info, "process \"evil\n<3>gpureap: fake\x1b[2J\"");
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
}

TEST(BaseLog, LevelNames) {
  EXPECT_EQ(log_level_from_string("warning"), LogLevel::Warning);
  EXPECT_EQ(log_level_from_string("debug"), LogLevel::Debug);
  EXPECT_FALSE(log_level_from_string("WARN"));
  EXPECT_STREQ(to_string(LogLevel::Notice), "notice");
}

}  // namespace
}  // namespace gpureap::base
