// A final close names the GPUs its file reaches, by the file's device number: the report draws
// it on those charts, not on the GPU its holder happens to be listed on.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "daemon/releases_document.h"
#include "snapshot_builders.h"

namespace gpureap::daemon {
namespace {

using namespace gpureap::testing;

TEST(ReleasesDocument, AFileReachesTheGpusWhoseDeviceNumbersItHas) {
  // /dev/null stands in for a GPU's node: a character device whose number GPU 1 names.
  struct stat null {};
  ASSERT_EQ(::stat("/dev/null", &null), 0);
  auto two = gpu(0, 0, 0, {});
  auto one = gpu(1, 1, 0, {});
  one.device_numbers.push_back(null.st_rdev);
  auto reading = drivers({two, one});
  EXPECT_EQ(gpus_reached("/dev/null", reading), std::vector<unsigned>{1});
  // A node both GPUs name (a compute node every GPU of a vendor shares): both.
  reading.gpus[0].device_numbers.push_back(null.st_rdev);
  EXPECT_EQ(gpus_reached("/dev/null", reading), (std::vector<unsigned>{0, 1}));
  // Not a character device, or no file: no GPU.
  EXPECT_TRUE(gpus_reached("/", reading).empty());
  EXPECT_TRUE(gpus_reached("/nonexistent/nvidia9", reading).empty());
}

}  // namespace
}  // namespace gpureap::daemon
