#pragma once
// The text of a file of the /proc fixture tree (tests/fixtures/proc, made by make_fixtures.sh).
#include <gtest/gtest.h>

#include <string>

#include "procfs/file_read.h"

namespace gpureap::testing {

// tests/fixtures/proc/<rel>; a missing file fails the test that asked for it.
inline std::string proc_fixture(const std::string& rel) {
  auto f = procfs::read_file(std::string(GPUREAP_FIXTURES) + "/proc/" + rel);
  EXPECT_TRUE(f.ok()) << "fixture " << rel << " unreadable, errno " << f.error;
  return f.data;
}

}  // namespace gpureap::testing
