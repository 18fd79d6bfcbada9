#include <gtest/gtest.h>
#include <signal.h>

#include "reap/arguments.h"

namespace gpureap::reap {
namespace {

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
  for (const char* bad :
       {"", "0", "-9", "65", "TERMINATE", "SIG", "9x", "RTMIN+", "RTMIN+99", "RTMIN-1"})
    EXPECT_FALSE(parse_signal(bad).ok()) << bad;
}

TEST(ReapArguments, SignalNames) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGCONT), "SIGCONT");
  EXPECT_EQ(signal_name(SIGRTMIN + 3), "SIGRTMIN+3");
}

// What completion offers for --signal is what --signal accepts, each name once, named back
// the same way, in number order.
TEST(ReapArguments, CompletedSignalNamesAreAccepted) {
  auto names = signal_names();
  ASSERT_GE(names.size(), 31u);
  EXPECT_EQ(names.front(), "HUP");
  int previous = 0;
  for (const auto& name : names) {
    auto number = parse_signal(name);
    ASSERT_TRUE(number.ok()) << name;
    EXPECT_GT(*number, previous) << name;
    previous = *number;
    EXPECT_EQ(signal_name(*number), "SIG" + name);
  }
}

}  // namespace
}  // namespace gpureap::reap
