#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "text/time_format.h"

namespace gpureap::text {
namespace {

using namespace std::chrono;

TEST(TextTimeFormat, Iso8601IsUtcWithMilliseconds) {
  system_clock::time_point t{milliseconds(1764575637123)};
  EXPECT_EQ(iso8601_utc(t), "2025-12-01T07:53:57.123Z");
}

TEST(TextTimeFormat, HumanAges) {
  EXPECT_EQ(human_age(seconds(45)), "45s");
  EXPECT_EQ(human_age(minutes(12)), "12m");
  EXPECT_EQ(human_age(hours(2) + minutes(13)), "2h13m");
  EXPECT_EQ(human_age(hours(76)), "3d4h");
  EXPECT_EQ(human_age(seconds(-5)), "0s");
}

TEST(TextTimeFormat, LocalClockAndDateTimeShowTheSameLocalTime) {
  system_clock::time_point t{seconds(1764575637)};
  std::string clock = local_clock(t), date_time = local_date_time(t);
  EXPECT_TRUE(std::regex_match(clock, std::regex(R"(\d\d:\d\d:\d\d)"))) << clock;
  EXPECT_TRUE(std::regex_match(date_time, std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")))
      << date_time;
  EXPECT_EQ(date_time.substr(11), clock);
}

}  // namespace
}  // namespace gpureap::text
