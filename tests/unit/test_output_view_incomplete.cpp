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

}  // namespace
}  // namespace gpureap::output
