#include <gtest/gtest.h>

#include "procfs/parsers.h"

using gpureap::procfs::parse_stat;

namespace {

std::string stat_line(const std::string& comm, const std::string& tail = "S 1 42 42 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 3 0 12345 1000 77 18446744073709551615") {
  return "4242 (" + comm + ") " + tail + " 0 0 0\n";
}

TEST(ParseStat, PlainFields) {
  auto st = parse_stat(stat_line("python"));
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->comm, "python");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 1);
  EXPECT_EQ(st->pgid, 42);
  EXPECT_EQ(st->sid, 42);
  EXPECT_EQ(st->num_threads, 3);
  EXPECT_EQ(st->start_ticks, 12345u);
  EXPECT_EQ(st->rss_pages, 77);
}

TEST(ParseStat, CommWithParenthesesAndSpacesSplitsAtLastParen) {
  auto st = parse_stat(stat_line(") (x y"));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->comm, ") (x y");
  EXPECT_EQ(st->ppid, 1);
}

TEST(ParseStat, CommWithNewline) {
  auto st = parse_stat(stat_line("a\nb) S 9"));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->comm, "a\nb) S 9");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->pgid, 42);
}

TEST(ParseStat, TruncatedIsAnError) {
  EXPECT_FALSE(parse_stat("4242 (python) S 1 42").ok());
  EXPECT_FALSE(parse_stat("").ok());
  EXPECT_FALSE(parse_stat("garbage without parens").ok());
  EXPECT_FALSE(parse_stat("abc (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22").ok());
}

TEST(ParseStat, NonNumericFieldIsAnError) {
  EXPECT_FALSE(parse_stat(stat_line("x", "S one 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 3 0 1 1 1 1")).ok());
}

}  // namespace
