// The line GPUREAP_TIMING prints for a phase: what the GPU kit parses.
#include <gtest/gtest.h>

#include "base/phase_timer.h"

namespace gpureap::base {
namespace {

TEST(PhaseTimer, ALineNamesThePhaseAndItsMillisecondsToTheMicrosecond) {
  using std::chrono::microseconds;
  EXPECT_EQ(timing_line("proc scan", microseconds(12345)), "gpureap: timing: proc scan: 12.345 ms");
  EXPECT_EQ(timing_line("nvml init", microseconds(0)), "gpureap: timing: nvml init: 0.000 ms");
  EXPECT_EQ(timing_line("x", std::chrono::seconds(2)), "gpureap: timing: x: 2000.000 ms");
}

}  // namespace
}  // namespace gpureap::base
