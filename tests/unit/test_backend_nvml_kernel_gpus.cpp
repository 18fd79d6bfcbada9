// The NVIDIA GPUs as the kernel module describes them, read without NVML: which device file is
// which GPU when the driver does not answer.
#include <gtest/gtest.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "backend/backend_set.h"
#include "backend/nvml/kernel_gpus.h"

namespace gpureap::backend::nvml {
namespace {

const std::string kFixture = std::string(GPUREAP_FIXTURES) + "/proc/nvidia-gpus";

TEST(NvmlKernelGpus, ParsesTheInformationFile) {
  auto info = parse_gpu_information(
      "Model: \t\t NVIDIA H200\nGPU UUID: \t GPU-0a3f\nBus Location: \t 0000:3B:00.0\n"
      "Device Minor: \t 7\nGPU Excluded:\t No\n");
  EXPECT_EQ(info.model, "NVIDIA H200");
  EXPECT_EQ(info.uuid, "GPU-0a3f");
  EXPECT_EQ(info.bus_location, "0000:3b:00.0");
  EXPECT_EQ(info.device_minor, 7u);
  EXPECT_FALSE(info.excluded);
  EXPECT_EQ(parse_gpu_information("Device Minor: \t 7x\n").device_minor, std::nullopt);
  EXPECT_EQ(parse_gpu_information("Device Minor: \t 255\n").device_minor, std::nullopt)
      << "255 is nvidiactl";
  EXPECT_EQ(parse_gpu_information("").bus_location, std::nullopt);
}

TEST(NvmlKernelGpus, NumbersGpusInPciOrderWithTheirOwnMinors) {
  auto gpus = read_kernel_gpus(kFixture);
  ASSERT_EQ(gpus.size(), 2u) << "the excluded GPU is not one NVML numbers";
  EXPECT_EQ(gpus[0].index, 0u);
  EXPECT_EQ(gpus[0].pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(gpus[0].minor, 1u);
  EXPECT_EQ(gpus[0].device_numbers, std::vector<dev_t>{::makedev(195, 1)});
  EXPECT_EQ(gpus[1].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(gpus[1].device_numbers, std::vector<dev_t>{::makedev(195, 0)});
  for (const auto& g : gpus) {
    EXPECT_EQ(g.memory.used_bytes, std::nullopt) << "nothing is measured";
    EXPECT_TRUE(g.known_from_kernel);
    EXPECT_TRUE(g.processes_error);
  }
}

TEST(NvmlKernelGpus, AGpuWhoseFileSaysTooLittleStopsTheWholeNumbering) {
  auto dir =
      std::filesystem::temp_directory_path() / ("gpureap-kgpus-" + std::to_string(::getpid()));
  std::filesystem::copy(kFixture, dir, std::filesystem::copy_options::recursive);
  std::ofstream(dir / "driver/nvidia/gpus/0000:19:00.0/information") << "Model: \t\t NVIDIA H200\n";
  EXPECT_TRUE(read_kernel_gpus(dir.string()).empty()) << "a hole would shift every index";
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(read_kernel_gpus("/nonexistent").empty());
}

TEST(NvmlKernelGpus, ABackendThatIsDownReportsTheKernelsGpus) {
  class Down : public GpuBackend {
   public:
    core::BackendReport collect() override {
      core::BackendReport r;
      r.name = "nvml";
      r.vendor = "nvidia";
      r.error = "NVML did not answer within 2s";
      r.error_code = core::BackendErrorCode::NotAnswering;
      return r;
    }
  };
  Registry registry{{"nvml", "nvidia", false,
                     [](const BackendSettings&) { return std::make_unique<Down>(); },
                     [](const BackendSettings& s) { return read_kernel_gpus(s.proc_root); }}};
  BackendSettings settings;
  settings.proc_root = kFixture;
  auto reading = BackendSet::make(registry, settings, {})->read();
  ASSERT_EQ(reading.gpus.size(), 2u);
  EXPECT_FALSE(reading.any_available());
  EXPECT_EQ(reading.gpus[0].minor, 1u);
  EXPECT_EQ(reading.gpus[0].backend, "nvml");
  EXPECT_EQ(reading.gpus[0].key, "nvidia:GPU-0a3f9c52-8e1d-4b7a-9c2e-1f5d6b7a8c90");
}

}  // namespace
}  // namespace gpureap::backend::nvml
