// `kill --gpu N` with a wedged driver: GPU N's device file comes from the kernel's
// /proc/driver/nvidia/gpus (its bus and Device Minor), never from N itself. The procfs is this
// machine's, seen through a folder of links to its entries beside a driver/nvidia tree laid out
// as the NVIDIA kernel module lays it out, where GPU 0 (the first by bus) is minor 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Every entry of /proc as a link, and, when `gpus` is given, driver/nvidia/gpus/<bus>/information
// for each (bus, minor). Made after the processes it must show exist.
class ProcWithNvidiaGpus : public TempDir {
 public:
  explicit ProcWithNvidiaGpus(const std::vector<std::pair<std::string, unsigned>>& gpus) {
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::string name = e.path().filename();
      if (name != "driver") fs::create_symlink(e.path(), fs::path(path()) / name);
    }
    for (const auto& [bus, minor] : gpus) {
      fs::path dir = fs::path(path()) / "driver/nvidia/gpus" / bus;
      fs::create_directories(dir);
      std::ofstream(dir / "information")
          << "Model: \t\t NVIDIA H200\nIRQ:   \t\t 188\nGPU UUID: \t GPU-" << bus
          << "\nBus Type: \t PCIe\nBus Location: \t " << bus << "\nDevice Minor: \t " << minor
          << "\nGPU Excluded:\t No\n";
    }
  }
};

json wedged_map_scenario() {
  return {
      {"block_call", "nvmlDeviceGetCount"},
      {"gpus",
       {{{"name", "NVIDIA H200"}, {"uuid", "GPU-0"}, {"minor", 1}, {"processes", json::array()}},
        {{"name", "NVIDIA H200"}, {"uuid", "GPU-1"}, {"minor", 0}, {"processes", json::array()}}}}};
}

TEST(KillWedgedGpuMap, GpuZeroIsTheKernelsMinorOneNotNvidiaZero) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child on_minor0 = holding(dev, "nvidia0");
  Child on_minor1 = holding(dev, "nvidia1");
  ProcWithNvidiaGpus proc({{"0000:19:00.0", 1}, {"0000:3b:00.0", 0}});
  FakeNvml nvml(wedged_map_scenario());
  auto r = run_gpureap({"kill", "--json", "--dry-run", "--gpu", "0", "--proc-root", proc.path(),
                        "--dev-root", dev.path(), "--driver-timeout", "300ms"},
                       nvml.env());
  EXPECT_EQ(r.exit_code, 4) << "the driver did not answer: " << r.err;
  auto doc = parse_output(r);
  EXPECT_EQ(planned_pids(doc), std::vector<pid_t>{on_minor1.pid()}) << r.out;
  EXPECT_NE(doc["plan"]["notes"].dump().find(
                "GPU 0 is 0000:19:00.0 (device minor 1) by the kernel's /proc/driver/nvidia/gpus"),
            std::string::npos)
      << doc["plan"]["notes"].dump();
  // ps names both GPUs from the kernel, nothing measured.
  auto ps = run_gpureap({"ps", "--json", "--no-daemon", "--proc-root", proc.path(), "--dev-root",
                         dev.path(), "--driver-timeout", "300ms"},
                        nvml.env());
  auto snap = parse_output(ps);
  ASSERT_EQ(snap["gpus"].size(), 2u) << ps.out;
  EXPECT_EQ(snap["gpus"][0]["minor"], 1);
  EXPECT_EQ(snap["gpus"][0]["pci_bus_id"], "0000:19:00.0");
  EXPECT_TRUE(snap["gpus"][0]["memory"]["used_bytes"].is_null());
  EXPECT_FALSE(snap["gpus"][0]["known_from_kernel"].is_null());
}

TEST(KillWedgedGpuMap, WithoutTheKernelsMapGpuIsRefusedNotGuessed) {
  REQUIRE_DOUBLE();
  if (fs::exists("/proc/driver/nvidia/gpus"))
    GTEST_SKIP() << "this machine's kernel names its GPUs";
  FakeDevRoot dev;
  Child on_minor0 = holding(dev, "nvidia0");
  FakeNvml nvml(wedged_map_scenario());
  // This machine's own /proc, without an NVIDIA module: a real kill, had gpureap guessed.
  auto r = run_gpureap(
      {"kill", "--yes", "--gpu", "0", "--dev-root", dev.path(), "--driver-timeout", "300ms"},
      nvml.env());
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("cannot tell which device files are GPU 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not guess"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << "no plan: " << r.out;
  EXPECT_TRUE(is_alive(on_minor0.pid()));
}

}  // namespace
}  // namespace gpureap::testing
