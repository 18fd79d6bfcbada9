#include <gtest/gtest.h>
#include <signal.h>

#include "reap/arguments.h"

namespace gpureap::reap {
namespace {

using std::chrono::milliseconds;

TEST(ReapArguments, DurationsInEveryAcceptedForm) {
  EXPECT_EQ(*parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(*parse_duration("10s"), milliseconds(10'000));
  EXPECT_EQ(*parse_duration("10"), milliseconds(10'000));
  EXPECT_EQ(*parse_duration("1.5s"), milliseconds(1'500));
  EXPECT_EQ(*parse_duration("1m"), milliseconds(60'000));
  EXPECT_EQ(*parse_duration("2min"), milliseconds(120'000));
  EXPECT_EQ(*parse_duration("0s"), milliseconds(0));
  EXPECT_EQ(*parse_duration("1h"), milliseconds(3'600'000));
}

TEST(ReapArguments, BadDurationsAreErrorsWithAHint) {
  for (const char* bad : {"", "s", "-1s", "10x", "1..5s", ".5s", "5.s", "ms10", "10 s", "2d", "25h"}) {
    auto r = parse_duration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find(bad), std::string::npos);
    EXPECT_FALSE(r.error().hint.empty());
  }
}

TEST(ReapArguments, SignalsByNameAndNumber) {
  EXPECT_EQ(*parse_signal("TERM"), SIGTERM);
  EXPECT_EQ(*parse_signal("SIGTERM"), SIGTERM);
  EXPECT_EQ(*parse_signal("sigint"), SIGINT);
  EXPECT_EQ(*parse_signal("kill"), SIGKILL);
  EXPECT_EQ(*parse_signal("9"), SIGKILL);
  EXPECT_EQ(*parse_signal("USR1"), SIGUSR1);
  EXPECT_EQ(*parse_signal("RTMIN"), SIGRTMIN);
  EXPECT_EQ(*parse_signal("SIGRTMIN+2"), SIGRTMIN + 2);
}

TEST(ReapArguments, BadSignalsAreErrors) {
  for (const char* bad : {"", "0", "-9", "65", "TERMINATE", "SIG", "9x", "RTMIN+", "RTMIN+99", "RTMIN-1"})
    EXPECT_FALSE(parse_signal(bad).ok()) << bad;
}

TEST(ReapArguments, SignalNames) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGCONT), "SIGCONT");
  EXPECT_EQ(signal_name(SIGRTMIN + 3), "SIGRTMIN+3");
}

}  // namespace
}  // namespace gpureap::reap
