#include <gtest/gtest.h>

#include "text/plural.h"

namespace gpureap::text {
namespace {

TEST(TextPlural, CountsWithTheirNoun) {
  EXPECT_EQ(plural(1, "GPU"), "1 GPU");
  EXPECT_EQ(plural(0, "finding"), "0 findings");
  EXPECT_EQ(plural(8, "GPU process"), "8 GPU processes");
  EXPECT_EQ(plural(2, "cleanup policy"), "2 cleanup policies");
  EXPECT_EQ(plural(2, "day"), "2 days");
}

}  // namespace
}  // namespace gpureap::text
