#include <gtest/gtest.h>
#include <sys/utsname.h>

#include "base/hostname.h"

namespace gpureap::base {
namespace {

TEST(BaseHostname, IsTheKernelsNodeName) {
  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  EXPECT_EQ(host_name(), u.nodename);
}

}  // namespace
}  // namespace gpureap::base
