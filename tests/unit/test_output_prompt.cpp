// The y/N question: one rule for every command that asks.
#include <gtest/gtest.h>

#include <sstream>

#include "output/prompt.h"

namespace gpureap::output {
namespace {

TEST(OutputPrompt, OnlyYAndYesGoAhead) {
  for (const char* yes : {"y", "Y", "yes"}) EXPECT_TRUE(is_yes(yes)) << yes;
  for (const char* no : {"", "n", "N", "no", "YES", "Yes", "yes ", " y", "yep", "ye"})
    EXPECT_FALSE(is_yes(no)) << '"' << no << '"';
}

TEST(OutputPrompt, AsksOnOutAndReadsOneLine) {
  std::istringstream in("yes\ny\n");
  std::ostringstream out;
  EXPECT_TRUE(ask_yes_no("Kill 2 processes?", in, out));
  EXPECT_EQ(out.str(), "Kill 2 processes? [y/N] ");
  std::istringstream shouted("YES\n");
  EXPECT_FALSE(ask_yes_no("Reset GPU 0?", shouted, out));
  std::istringstream closed("");  // end of input: no
  EXPECT_FALSE(ask_yes_no("Reset GPU 0?", closed, out));
}

}  // namespace
}  // namespace gpureap::output
