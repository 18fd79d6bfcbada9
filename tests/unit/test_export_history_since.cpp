#include <gtest/gtest.h>

#include "export/history_since.h"

namespace gpureap::exporter {
namespace {

using namespace std::chrono;
using history::TimePoint;

const TimePoint kNow = TimePoint(seconds(1'700'000'000));

TEST(ExportHistorySince, SinceAsDurationAgoUnixTimeOrRfc3339) {
  EXPECT_EQ(*parse_since("10m", kNow), kNow - minutes(10));
  EXPECT_EQ(*parse_since("90s", kNow), kNow - seconds(90));
  EXPECT_EQ(*parse_since("1h", kNow), kNow - hours(1));
  EXPECT_EQ(*parse_since("1699999000", kNow), TimePoint(seconds(1'699'999'000)));
  EXPECT_EQ(*parse_since("1699999000.25", kNow), TimePoint(milliseconds(1'699'999'000'250)));
  EXPECT_EQ(*parse_since("2023-11-14T22:13:20Z", kNow), kNow);
  EXPECT_EQ(*parse_since("2023-11-14T22:13:20.5Z", kNow), kNow + milliseconds(500));
  EXPECT_EQ(*parse_since("2023-11-14T22:13:20+00:00", kNow), kNow);
  EXPECT_EQ(*parse_since("2023-11-15T00:13:20+02:00", kNow), kNow);
}

TEST(ExportHistorySince, BadSinceSaysHowToWriteIt) {
  for (const char* bad :
       {"", "yesterday", "-5", "10x", "2023-11-14T22:13:20+0200", "2023-11-14T22:13", "1e999",
        // Later than a TimePoint holds (2262): refused, not overflowed.
        "1700000070000000000", "1e12", "9999-12-31T23:59:59Z"}) {
    auto r = parse_since(bad, kNow);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().hint.find("RFC 3339"), std::string::npos) << bad;
    }
  }
}

}  // namespace
}  // namespace gpureap::exporter
