#include <gtest/gtest.h>

#include "core/duration.h"

namespace gpureap::core {
namespace {

using std::chrono::milliseconds;

TEST(CoreDuration, ParsesEveryUnit) {
  EXPECT_EQ(*parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(*parse_duration("30s"), milliseconds(30'000));
  EXPECT_EQ(*parse_duration("1.5s"), milliseconds(1'500));
  EXPECT_EQ(*parse_duration("5m"), milliseconds(300'000));
  EXPECT_EQ(*parse_duration("1h"), milliseconds(3'600'000));
  EXPECT_EQ(*parse_duration("2d"), milliseconds(172'800'000));
  EXPECT_EQ(*parse_duration("2min"), milliseconds(120'000));
  EXPECT_EQ(*parse_duration("0"), milliseconds(0));
}

TEST(CoreDuration, RejectsGarbageWithAHint) {
  for (const char* bad :
       {"", "s", "-1s", "1.2.3s", ".5s", "5.s", "10 s", "1w", "soon", "367d", "1e3", "10x", "ms10",
        "30", "5", "0.5"}) {  // a number without a unit could mean seconds or milliseconds
    auto d = parse_duration(bad);
    EXPECT_FALSE(d.ok()) << bad;
    if (!d.ok()) {
      EXPECT_NE(d.error().hint.find("500ms"), std::string::npos);
    }
  }
}

TEST(CoreDuration, FormatsForHumans) {
  EXPECT_EQ(format_duration(milliseconds(0)), "0ms");
  EXPECT_EQ(format_duration(milliseconds(250)), "250ms");
  EXPECT_EQ(format_duration(milliseconds(1'000)), "1s");
  EXPECT_EQ(format_duration(milliseconds(1'540)), "1.5s");
  EXPECT_EQ(format_duration(milliseconds(123'000)), "2m03s");
  EXPECT_EQ(format_duration(milliseconds(3'720'000)), "1h02m");
  EXPECT_EQ(format_duration(milliseconds(273'600'000)), "3d4h");
  EXPECT_EQ(format_duration(milliseconds(-5)), "0ms");
  EXPECT_DOUBLE_EQ(seconds(milliseconds(1'234)), 1.234);
}

}  // namespace
}  // namespace gpureap::core
