#include <gtest/gtest.h>

#include "text/trim.h"

using gpureap::text::trim;

TEST(TextTrim, CutsEveryBlankAtBothEndsAndKeepsInnerOnes) {
  EXPECT_EQ(trim(" \t 1048576 kB\r\n"), "1048576 kB");
  EXPECT_EQ(trim("a b"), "a b");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \n\t"), "");
}

TEST(TextTrim, CutsOnlyTheBlanksItIsGiven) {
  // An HTTP header's optional whitespace is spaces and tabs: a CR stays part of the value.
  EXPECT_EQ(trim("\t value \r", " \t"), "value \r");
  EXPECT_EQ(trim("  x  ", " "), "x");
  EXPECT_EQ(trim("\tx\t", " "), "\tx\t");
}
