#include <gtest/gtest.h>

#include "text/byte_format.h"

namespace gpureap::text {
namespace {

constexpr uint64_t GiB = 1ull << 30;

TEST(TextByteFormat, OneRoundingRuleForBothSpellings) {
  // Below 10 of a unit one decimal, from 10 on none; the same figure in both spellings.
  EXPECT_EQ(human_bytes(8 * GiB), "8.0 GiB");
  EXPECT_EQ(compact_bytes(8 * GiB), "8.0G");
  EXPECT_EQ(human_bytes(80 * GiB), "80 GiB");
  EXPECT_EQ(compact_bytes(80 * GiB), "80G");
  EXPECT_EQ(human_bytes(GiB + GiB / 2), "1.5 GiB");
  EXPECT_EQ(human_bytes(512ull << 20), "512 MiB");
  EXPECT_EQ(compact_bytes(512ull << 20), "512M");
}

TEST(TextByteFormat, BytesBelowAKibibyteAreExact) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(compact_bytes(1023), "1023B");
  EXPECT_EQ(human_bytes(1024), "1.0 KiB");
}

}  // namespace
}  // namespace gpureap::text
