#include <gtest/gtest.h>

#include "output/view_incomplete.h"
#include "snapshot_builders.h"

namespace gpureap::output {
namespace {

using namespace gpureap::testing;

TEST(OutputViewIncomplete, SaysHowManyAndWhatHelps) {
  EXPECT_EQ(view_incomplete(make_snapshot({proc(1, 0, 1)}, {})), "");
  auto s = make_snapshot({proc(1, 0, 1)}, {}, {.uninspectable = 3});
  EXPECT_EQ(view_incomplete(s),
            "view incomplete: 3 processes could not be inspected; run as root or grant "
            "CAP_SYS_PTRACE");
}

TEST(OutputViewIncomplete, AFailedScanIsSaidBeforeWhatPrivilegeWouldShow) {
  auto s = make_snapshot({proc(1, 0, 1)}, {}, {.uninspectable = 3});
  s.proc.scan_failures = {
      "5 processes could not be scanned (listing /proc/PID/fd: Too many "
      "open files): raise the limit"};
  EXPECT_FALSE(s.complete());
  EXPECT_EQ(view_incomplete(s),
            "view incomplete: the holder scan failed, so holders may be missing: 5 processes could "
            "not be scanned (listing /proc/PID/fd: Too many open files): raise the limit; 3 "
            "processes could not be inspected; run as root or grant CAP_SYS_PTRACE");
  s.proc.uninspectable = 0;
  EXPECT_EQ(incomplete_reason(s),
            "the holder scan failed, so holders may be missing: 5 processes could not be scanned "
            "(listing /proc/PID/fd: Too many open files): raise the limit");
}

}  // namespace
}  // namespace gpureap::output
