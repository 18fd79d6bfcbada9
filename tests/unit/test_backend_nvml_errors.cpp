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
