#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "base/log.h"

namespace gpureap::base {
namespace {

TEST(BaseLog, JournalLinesCarryTheSyslogPriority) {
  EXPECT_EQ(format_log_line(LogLevel::Error, "boom", true), "<3>gpureap: boom");
  EXPECT_EQ(format_log_line(LogLevel::Warning, "hm", true), "<4>gpureap: hm");
  EXPECT_EQ(format_log_line(LogLevel::Notice, "n", true), "<5>gpureap: n");
  EXPECT_EQ(format_log_line(LogLevel::Info, "i", true), "<6>gpureap: i");
  EXPECT_EQ(format_log_line(LogLevel::Debug, "d", true), "<7>gpureap: d");
}

TEST(BaseLog, OtherLinesSayTheLevelInWords) {
  EXPECT_EQ(format_log_line(LogLevel::Error, "boom", false), "gpureap: error: boom");
  EXPECT_EQ(format_log_line(LogLevel::Warning, "hm", false), "gpureap: warning: hm");
  EXPECT_EQ(format_log_line(LogLevel::Notice, "n", false), "gpureap: n");
  EXPECT_EQ(format_log_line(LogLevel::Info, "i", false), "gpureap: i");
  EXPECT_EQ(format_log_line(LogLevel::Debug, "d", false), "gpureap: debug: d");
}

// The value systemd would put in $JOURNAL_STREAM for `fd`.
std::string stream_of(int fd) {
  struct stat st {};
  EXPECT_EQ(::fstat(fd, &st), 0);
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

TEST(BaseLog, TheJournalIsTheStreamJournalStreamNames) {
  int journal[2], other[2];
  ASSERT_EQ(::pipe(journal), 0);
  ASSERT_EQ(::pipe(other), 0);
  const std::string mine = stream_of(journal[1]);
  EXPECT_TRUE(is_journal_stream(journal[1], mine.c_str())) << mine;
  // Another stream: a child whose stderr was redirected still inherits the variable.
  EXPECT_FALSE(is_journal_stream(other[1], mine.c_str())) << mine;
  struct stat st {};
  ASSERT_EQ(::fstat(journal[1], &st), 0);
  const std::string other_inode = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1);
  EXPECT_FALSE(is_journal_stream(journal[1], other_inode.c_str()));
  const std::string other_device = std::to_string(st.st_dev + 1) + ":" + std::to_string(st.st_ino);
  EXPECT_FALSE(is_journal_stream(journal[1], other_device.c_str()));
  for (const char* bad :
       {"", ":", "12", "12:", ":34", "a:b", "-1:5", "1:2:3", "99999999999999999999999:1", " 1:2"})
    EXPECT_FALSE(is_journal_stream(journal[1], bad)) << bad;
  EXPECT_FALSE(is_journal_stream(journal[1], nullptr));
  for (int fd : {journal[0], journal[1], other[0], other[1]}) ::close(fd);
  EXPECT_FALSE(is_journal_stream(journal[1], mine.c_str())) << "a closed fd is no stream";
}

TEST(BaseLog, StderrIsTheJournalOnlyWhenTheVariableNamesIt) {
  const char* saved = std::getenv("JOURNAL_STREAM");
  std::string keep = saved ? saved : "";
  ::unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(stderr_is_journal());
  ::setenv("JOURNAL_STREAM", stream_of(STDERR_FILENO).c_str(), 1);
  EXPECT_TRUE(stderr_is_journal());
  ::setenv("JOURNAL_STREAM", "0:0", 1);
  EXPECT_FALSE(stderr_is_journal());
  if (saved)
    ::setenv("JOURNAL_STREAM", keep.c_str(), 1);
  else
    ::unsetenv("JOURNAL_STREAM");
}

TEST(BaseLog, AMessageIsOneLineWhateverItQuotes) {
  // A process name with a newline and an escape sequence cannot start a forged log entry.
  for (bool journal : {true, false}) {
    auto line =
        format_log_line(LogLevel::Info, "process \"evil\n<3>gpureap: fake\x1b[2J\"", journal);
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
}

TEST(BaseLog, LevelNames) {
  EXPECT_EQ(log_level_from_string("warning"), LogLevel::Warning);
  EXPECT_EQ(log_level_from_string("debug"), LogLevel::Debug);
  EXPECT_FALSE(log_level_from_string("WARN"));
  EXPECT_STREQ(to_string(LogLevel::Notice), "notice");
}

}  // namespace
}  // namespace gpureap::base
