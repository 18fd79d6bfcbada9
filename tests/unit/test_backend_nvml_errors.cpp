// NVML return codes become messages that say what failed and what to do next.
#include <gtest/gtest.h>

#include <string>

#include "backend/nvml/errors.h"

namespace gpureap::backend::nvml {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(nvmlErrors, InitErrorsNameTheCauseAndTheNextStep) {
  const std::string not_loaded =
      init_error(NVML_ERROR_DRIVER_NOT_LOADED, "nvmlInit_v2", nullptr).text();
  EXPECT_TRUE(contains(not_loaded, "the NVIDIA kernel driver is not loaded")) << not_loaded;
  EXPECT_TRUE(contains(not_loaded, "modprobe nvidia"));
  EXPECT_TRUE(contains(not_loaded, "NVML_ERROR_DRIVER_NOT_LOADED"));

  const std::string mismatch =
      init_error(NVML_ERROR_LIB_RM_VERSION_MISMATCH, "nvmlInit_v2", nullptr).text();
  EXPECT_TRUE(contains(mismatch, "versions differ")) << mismatch;
  EXPECT_TRUE(contains(mismatch, "reboot"));

  const std::string denied = init_error(NVML_ERROR_NO_PERMISSION, "nvmlInit", nullptr).text();
  EXPECT_TRUE(contains(denied, "no permission")) << denied;
  EXPECT_TRUE(contains(denied, "/dev/nvidia"));

  const std::string other = init_error(NVML_ERROR_UNKNOWN, "nvmlInit_v2", "Unknown Error").text();
  EXPECT_TRUE(contains(other, "Unknown Error")) << other;
  EXPECT_TRUE(contains(other, "nvidia-smi"));
}

// nvmlInit out of descriptors: the code it returns blames the driver; the message says what
// failed, the count that explains it, and the limit to raise, within the hard one.
TEST(nvmlErrors, AnInitStarvedOfDescriptorsSaysSoAndHowToRaiseTheLimit) {
  const std::string near =
      init_starved_error(NVML_ERROR_DRIVER_NOT_LOADED, "nvmlInit_v2", 1020, 1024, 4096).text();
  EXPECT_TRUE(contains(near, "library could not initialise")) << near;
  EXPECT_TRUE(contains(near, "gpureap has 1020 of its 1024 file descriptors open")) << near;
  EXPECT_TRUE(contains(near, "(nvmlInit_v2 returned NVML_ERROR_DRIVER_NOT_LOADED)")) << near;
  EXPECT_TRUE(contains(near, "`ulimit -n 2048`")) << near;
  EXPECT_TRUE(contains(near, "LimitNOFILE=2048")) << near;
  EXPECT_FALSE(contains(near, "modprobe")) << near;
  EXPECT_FALSE(contains(near, "is not loaded")) << near;

  const std::string all =
      init_starved_error(NVML_ERROR_NO_PERMISSION, "nvmlInit_v2", 64, 64, 100).text();
  EXPECT_TRUE(contains(all, "gpureap has all 64 of its file descriptors open")) << all;
  EXPECT_TRUE(contains(all, "`ulimit -n 100` in the shell (its hard limit")) << all;
  EXPECT_TRUE(contains(all, "LimitNOFILE=1024")) << all;

  const std::string at_hard =
      init_starved_error(NVML_ERROR_UNKNOWN, "nvmlInit_v2", 1024, 1024, 1024).text();
  EXPECT_TRUE(contains(at_hard, "ulimit -Hn 2048; ulimit -n 2048")) << at_hard;
  EXPECT_TRUE(contains(at_hard, "in a root shell")) << at_hard;
}

// Only codes a failed open can produce are checked against the descriptors.
TEST(nvmlErrors, OnlyCodesOfAFailedOpenMayMeanNoDescriptor) {
  for (nvmlReturn_t rc : {NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_NO_PERMISSION,
                          NVML_ERROR_OPERATING_SYSTEM, NVML_ERROR_UNKNOWN})
    EXPECT_TRUE(init_may_have_lacked_a_file(rc)) << return_code_name(rc);
  for (nvmlReturn_t rc : {NVML_ERROR_LIB_RM_VERSION_MISMATCH, NVML_ERROR_GPU_IS_LOST,
                          NVML_ERROR_IRQ_ISSUE, NVML_ERROR_INSUFFICIENT_POWER})
    EXPECT_FALSE(init_may_have_lacked_a_file(rc)) << return_code_name(rc);
}

TEST(nvmlErrors, InitErrorsHaveStableCodes) {
  EXPECT_STREQ(core::to_string(init_error_code(NVML_ERROR_DRIVER_NOT_LOADED)), "driver-not-loaded");
  EXPECT_STREQ(core::to_string(init_error_code(NVML_ERROR_LIB_RM_VERSION_MISMATCH)),
               "version-mismatch");
  EXPECT_STREQ(core::to_string(init_error_code(NVML_ERROR_NO_PERMISSION)), "no-permission");
  EXPECT_STREQ(core::to_string(init_error_code(NVML_ERROR_UNKNOWN)), "init-failed");
}

TEST(nvmlErrors, LostGpuSaysWhichAndWhatToDo) {
  const std::string lost =
      gpu_error(3, NVML_ERROR_GPU_IS_LOST, "nvmlDeviceGetName", nullptr).text();
  EXPECT_TRUE(contains(lost, "GPU 3 has fallen off the bus")) << lost;
  EXPECT_TRUE(contains(lost, "dmesg"));
  EXPECT_TRUE(contains(lost, "reboot"));
  const std::string reset = gpu_error(1, NVML_ERROR_RESET_REQUIRED, "x", nullptr).text();
  EXPECT_TRUE(contains(reset, "nvidia-smi -r -i 1")) << reset;
}

TEST(nvmlErrors, UnavailableMetricsAreNotFailures) {
  EXPECT_TRUE(is_metric_unavailable(NVML_ERROR_NOT_SUPPORTED));
  EXPECT_TRUE(is_metric_unavailable(NVML_ERROR_NOT_FOUND));
  EXPECT_FALSE(is_metric_unavailable(NVML_ERROR_GPU_IS_LOST));
  EXPECT_FALSE(is_metric_unavailable(NVML_ERROR_UNKNOWN));
  EXPECT_STREQ(return_code_name(NVML_ERROR_GPU_IS_LOST), "NVML_ERROR_GPU_IS_LOST");
  EXPECT_STREQ(return_code_name(12345), "NVML_ERROR_(unrecognised)");
}

}  // namespace
}  // namespace gpureap::backend::nvml
