// Which MIG instance a capability device file opens, read from the kernel's own description.
#include <gtest/gtest.h>

#include "backend/nvml/mig_capabilities.h"

namespace gpureap::backend::nvml {
namespace {

const std::string kMigProc = std::string(GPUREAP_FIXTURES) + "/proc/nvidia-mig";

TEST(NvmlMigCapabilities, ParsesTheAccessFile) {
  EXPECT_EQ(parse_capability_minor("DeviceFileMinor: 12\nDeviceFileMode: 292\n"), 12u);
  EXPECT_EQ(parse_capability_minor("DeviceFileMode: 292\nDeviceFileMinor:\t7\n"), 7u);
  EXPECT_EQ(parse_capability_minor("DeviceFileMode: 292\n"), std::nullopt);
  EXPECT_EQ(parse_capability_minor("DeviceFileMinor: 12x\n"), std::nullopt);
  EXPECT_EQ(parse_capability_minor("DeviceFileMinor: -1\n"), std::nullopt);
  EXPECT_EQ(parse_capability_minor("DeviceFileMinor: \n"), std::nullopt);
  EXPECT_EQ(parse_capability_minor(""), std::nullopt);
}

TEST(NvmlMigCapabilities, EachExistingInstanceWithItsComputeInstances) {
  auto caps = read_mig_capabilities(kMigProc);
  // The global files (mig/config, mig/monitor, fabric-mgmt) are no instance; gi9 names no minor
  // and is left out, not guessed.
  std::vector<MigCapability> expected{
      {0, 1, std::nullopt, 12}, {0, 1, 0u, 13}, {0, 2, std::nullopt, 21},
      {0, 2, 0u, 22},           {0, 2, 1u, 23},
  };
  EXPECT_EQ(caps, expected);
  ASSERT_NE(find_capability(caps, 23), nullptr);
  EXPECT_EQ(find_capability(caps, 23)->gpu_instance, 2u);
  EXPECT_EQ(find_capability(caps, 23)->compute_instance, 1u);
  EXPECT_EQ(find_capability(caps, 1), nullptr) << "mig/config is not an instance";
  EXPECT_TRUE(read_mig_capabilities("/nonexistent").empty());
}

}  // namespace
}  // namespace gpureap::backend::nvml
