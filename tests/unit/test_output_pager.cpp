// Which pager long output goes through, as git and systemctl choose one.
#include <gtest/gtest.h>

#include "output/pager.h"

namespace gpureap::output {
namespace {

bool has_less(const std::string& name) {
  return name == "less";
}
bool nothing(const std::string&) {
  return false;
}

TEST(OutputPager, OnATerminalPagerThenLess) {
  EXPECT_EQ(choose_pager(true, false, nullptr, has_less), std::string("less -FRX"));
  EXPECT_EQ(choose_pager(true, false, "most", has_less), std::string("most"));
  EXPECT_EQ(choose_pager(true, false, "less -S", nothing), std::string("less -S"));
}

TEST(OutputPager, NeverIntoAPipeNorWithNoPager) {
  EXPECT_EQ(choose_pager(false, false, "most", has_less), std::nullopt);
  EXPECT_EQ(choose_pager(false, false, nullptr, has_less), std::nullopt);
  EXPECT_EQ(choose_pager(true, true, "most", has_less), std::nullopt);
  EXPECT_EQ(choose_pager(true, true, nullptr, has_less), std::nullopt);
}

TEST(OutputPager, AnEmptyOrCatPagerMeansNoneAndNoLessMeansNone) {
  EXPECT_EQ(choose_pager(true, false, "", has_less), std::nullopt);
  EXPECT_EQ(choose_pager(true, false, "cat", has_less), std::nullopt);
  EXPECT_EQ(choose_pager(true, false, nullptr, nothing), std::nullopt);
}

TEST(OutputPager, OnlyTextLongerThanTheScreenIsPaged) {
  EXPECT_FALSE(longer_than("a\nb\n", 2));
  EXPECT_TRUE(longer_than("a\nb\nc\n", 2));
  EXPECT_TRUE(longer_than("a\nb\nc", 2));
  EXPECT_FALSE(longer_than("", 1));
}

}  // namespace
}  // namespace gpureap::output
