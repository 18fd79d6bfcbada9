// Which NVML calls the backend makes, counted by the test double (FAKE_NVML_CALL_COUNTS): no
// call whose answer cannot matter (MIG handles outside MIG mode, the MPS list where no MPS
// server serves the GPU, a GPU's static facts read again by the same session, a size query
// before a list that fits the buffer), and every call whose answer can; and the calls that are
// made side by side (each GPU on its own thread, a GPU's utilisation samples beside its other
// calls).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "backend/nvml/process_lists.h"
#include "fake_nvml_fixture.h"

namespace gpureap::testing {
namespace {

using core::GpuProcessKind;
using nlohmann::json;

class nvmlCalls : public FakeNvmlFixture {
 protected:
  void SetUp() override {
    FakeNvmlFixture::SetUp();
    counts_path_ = dir_ + "/calls.json";
    setenv("FAKE_NVML_CALL_COUNTS", counts_path_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_CALL_COUNTS");
    FakeNvmlFixture::TearDown();
  }

  // Calls of `function` by this process since the double was loaded, every version of it
  // (nvmlDeviceGetPciInfo counts nvmlDeviceGetPciInfo_v3 too).
  unsigned long calls(const std::string& function) const {
    std::ifstream in(counts_path_);
    if (!in) return 0;
    const json counts = json::parse(in);
    unsigned long total = 0;
    for (const auto& [name, count] : counts.items())
      if (name == function || name.rfind(function + "_v", 0) == 0)
        total += count.get<unsigned long>();
    return total;
  }

  std::string counts_path_;
};

json gpu_with(json processes) {
  return {{"name", "NVIDIA H200"}, {"mig_mode", false}, {"processes", std::move(processes)}};
}

TEST_F(nvmlCalls, NoMigHandleIsAskedForOutsideMigMode) {
  const pid_t job = spawn_sleeper();
  json gpu = gpu_with({{{"pid", job}, {"used_bytes", kGiB}}});
  gpu["max_mig_devices"] = 7;
  gpu["mig_devices"] = {{{"slot", 0}, {"gpu_instance_id", 1}}};
  write_scenario({{"gpus", {gpu}}});
  const auto report = collect();
  ASSERT_TRUE(report.available) << report.error.value_or("");
  EXPECT_EQ(report.gpus.at(0).split_mode, false);
  EXPECT_GE(calls("nvmlDeviceGetMigMode"), 1u) << "the mode itself is asked";
  EXPECT_EQ(calls("nvmlDeviceGetMaxMigDeviceCount"), 0u);
  EXPECT_EQ(calls("nvmlDeviceGetMigDeviceHandleByIndex"), 0u);
  EXPECT_EQ(report.gpus.at(0).processes.size(), 1u);
}

TEST_F(nvmlCalls, MigHandlesAreAskedForInMigMode) {
  json gpu = gpu_with(json::array());
  gpu["mig_mode"] = true;
  gpu["mig_devices"] = {{{"slot", 0}, {"gpu_instance_id", 1}}};
  write_scenario({{"gpus", {gpu}}});
  const auto report = collect();
  ASSERT_EQ(report.gpus.at(0).instances.size(), 1u);
  EXPECT_EQ(calls("nvmlDeviceGetMaxMigDeviceCount"), 1u);
  EXPECT_GE(calls("nvmlDeviceGetMigDeviceHandleByIndex"), 1u);
}

TEST_F(nvmlCalls, NoMpsListWhereEveryListedProcessIsNamedAndNoneIsTheServer) {
  const pid_t job = spawn_sleeper();
  const pid_t viewer = spawn_sleeper();
  write_scenario({{"gpus",
                   {gpu_with({{{"pid", job}, {"used_bytes", kGiB}, {"name", "python"}},
                              {{"pid", viewer}, {"kind", "graphics"}, {"name", "Xorg"}}})}}});
  const auto gpu = collect().gpus.at(0);
  EXPECT_EQ(calls("nvmlDeviceGetMPSComputeRunningProcesses"), 0u);
  EXPECT_GE(calls("nvmlDeviceGetComputeRunningProcesses"), 1u);
  EXPECT_GE(calls("nvmlDeviceGetGraphicsRunningProcesses"), 1u);
  ASSERT_EQ(gpu.processes.size(), 2u);
  EXPECT_EQ(gpu.processes[0].name, "python");
  EXPECT_EQ(gpu.processes[1].name, "Xorg");
}

TEST_F(nvmlCalls, TheMpsListIsReadWhereTheServerIsListed) {
  const pid_t server = spawn_sleeper();
  const pid_t client = spawn_sleeper();
  // The kernel's comm of the server: its program name cut to 15 bytes.
  write_scenario({{"gpus",
                   {gpu_with({{{"pid", server}, {"used_bytes", kGiB}, {"name", "nvidia-cuda-mps"}},
                              {{"pid", client}, {"used_bytes", 2 * kGiB}, {"kind", "mps"}}})}}});
  const auto gpu = collect().gpus.at(0);
  EXPECT_GE(calls("nvmlDeviceGetMPSComputeRunningProcesses"), 1u);
  ASSERT_NE(find_process(gpu, client), nullptr);
  EXPECT_EQ(find_process(gpu, client)->kind, GpuProcessKind::ServerClient);
}

TEST_F(nvmlCalls, TheMpsListIsReadWhenAListedProcessHasNoName) {
  // A PID no process has, and no name in the scenario: the driver cannot name it.
  write_scenario({{"gpus",
                   {gpu_with({{{"pid", 4194000}, {"used_bytes", kGiB}, {"leaked", true}},
                              {{"pid", 4194001}, {"kind", "mps"}, {"leaked", true}}})}}});
  const auto gpu = collect().gpus.at(0);
  EXPECT_GE(calls("nvmlDeviceGetMPSComputeRunningProcesses"), 1u);
  EXPECT_NE(find_process(gpu, 4194001), nullptr);
}

TEST_F(nvmlCalls, AListThatFitsItsBufferIsOneCallAndALongerOneIsStillReadWhole) {
  const pid_t job = spawn_sleeper();
  write_scenario({{"gpus", {gpu_with({{{"pid", job}, {"used_bytes", kGiB}, {"sm_util", 40}}})}}});
  auto gpu = collect().gpus.at(0);
  EXPECT_EQ(calls("nvmlDeviceGetComputeRunningProcesses"), 1u) << "no size query first";
  EXPECT_EQ(calls("nvmlDeviceGetProcessUtilization"), 1u) << "no size query first";
  ASSERT_EQ(gpu.processes.size(), 1u);
  EXPECT_EQ(gpu.processes[0].sm_utilization_percent, 40u);
  // More processes than the first buffer holds (leaked contexts: PIDs no process has): the
  // driver says how many, and the read is made again with room for them all.
  std::remove(counts_path_.c_str());
  json many = json::array();
  const unsigned n = backend::nvml::kProcessFirstRead + backend::nvml::kProcessSlack + 5;
  for (unsigned i = 0; i < n; ++i)
    many.push_back({{"pid", 4190000 + i}, {"used_bytes", kGiB}, {"leaked", true}});
  write_scenario({{"gpus", {gpu_with(many)}}});
  gpu = collect().gpus.at(0);
  EXPECT_EQ(gpu.processes.size(), n);
  EXPECT_EQ(calls("nvmlDeviceGetComputeRunningProcesses"), 2u);
}

TEST_F(nvmlCalls, StaticFactsAreReadOncePerSession) {
  const pid_t job = spawn_sleeper();
  json gpu = gpu_with({{{"pid", job}, {"used_bytes", kGiB}}});
  gpu["uuid"] = "GPU-11111111-2222-3333-4444-555555555555";
  gpu["pci_bus_id"] = "00000000:17:00.0";
  gpu["minor"] = 3;
  write_scenario({{"gpus", {gpu, gpu_with(json::array())}}});
  auto nvml = backend();
  const auto first = nvml->collect();
  const unsigned long memory_once = calls("nvmlDeviceGetMemoryInfo");
  const auto second = nvml->collect();
  for (const char* fn : {"nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo",
                         "nvmlDeviceGetMinorNumber"})
    EXPECT_EQ(calls(fn), 2u) << fn << ": once per GPU, not once per collection";
  EXPECT_EQ(calls("nvmlDeviceGetMemoryInfo"), 2 * memory_once) << "memory is read every time";
  ASSERT_EQ(second.gpus.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(second.gpus[i].name, first.gpus[i].name);
    EXPECT_EQ(second.gpus[i].uuid, first.gpus[i].uuid);
    EXPECT_EQ(second.gpus[i].pci_bus_id, first.gpus[i].pci_bus_id);
    EXPECT_EQ(second.gpus[i].minor, first.gpus[i].minor);
    EXPECT_EQ(second.gpus[i].device_numbers, first.gpus[i].device_numbers);
  }
  EXPECT_EQ(second.gpus[0].uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(second.gpus[0].minor, 3u);
  ASSERT_EQ(second.gpus[0].processes.size(), 1u);
}

TEST_F(nvmlCalls, ANewSessionReadsTheStaticFactsAgain) {
  write_scenario({{"gpus", {gpu_with(json::array())}}});
  auto nvml = backend();
  (void)nvml->collect();
  nvml.reset();  // nvmlShutdown: the session ends
  std::remove(counts_path_.c_str());
  json renamed = gpu_with(json::array());
  renamed["name"] = "NVIDIA H100";
  write_scenario({{"gpus", {renamed}}});
  const auto report = collect();
  EXPECT_GE(calls("nvmlDeviceGetName"), 1u);
  EXPECT_EQ(report.gpus.at(0).name, "NVIDIA H100");
}

TEST_F(nvmlCalls, AFactThatCouldNotBeReadIsAskedForAgain) {
  json lost = gpu_with(json::array());
  lost["error"] = "unknown";
  write_scenario({{"gpus", {lost}}});
  auto nvml = backend();
  const auto first = nvml->collect();
  EXPECT_FALSE(first.gpus.at(0).name.has_value());
  write_scenario({{"gpus", {gpu_with(json::array())}}});
  const auto second = nvml->collect();
  EXPECT_EQ(second.gpus.at(0).name, "NVIDIA H200");
}

// Calls made side by side: the double holds each call of a meeting until all its calls have
// begun, and fails them after 10 s; made one after the other, they never meet and the test fails.
TEST_F(nvmlCalls, EachGpuIsReadOnAThreadOfItsOwn) {
  const pid_t first = spawn_sleeper();
  const pid_t second = spawn_sleeper();
  json one = gpu_with({{{"pid", first}, {"used_bytes", kGiB}, {"sm_util", 20}}});
  one["minor"] = 0;
  json two = gpu_with({{{"pid", second}, {"used_bytes", 2 * kGiB}, {"sm_util", 30}}});
  two["name"] = "NVIDIA H100";
  two["minor"] = 1;
  write_scenario({{"meet", {{"nvmlDeviceGetHandleByIndex", 2}}}, {"gpus", {one, two}}});
  const auto report = collect();
  ASSERT_TRUE(report.available) << report.error.value_or("");
  ASSERT_EQ(report.gpus.size(), 2u);
  const pid_t holders[] = {first, second};
  for (unsigned i = 0; i < 2; ++i) {
    const auto& gpu = report.gpus[i];
    EXPECT_FALSE(gpu.error) << "GPU " << i << ": " << gpu.error.value_or("");
    EXPECT_EQ(gpu.index, i) << "in NVML's order";
    EXPECT_EQ(gpu.minor, i);
    ASSERT_EQ(gpu.processes.size(), 1u) << "GPU " << i;
    EXPECT_EQ(gpu.processes[0].pid, holders[i]) << "each GPU keeps its own processes";
    EXPECT_EQ(gpu.processes[0].sm_utilization_percent, i == 0 ? 20u : 30u);
  }
  EXPECT_EQ(report.gpus[0].name, "NVIDIA H200");
  EXPECT_EQ(report.gpus[1].name, "NVIDIA H100");
  EXPECT_EQ(calls("nvmlDeviceGetHandleByIndex"), 2u);
  EXPECT_EQ(calls("nvmlDeviceGetComputeRunningProcesses"), 2u);
}

TEST_F(nvmlCalls, TheUtilisationSamplesAreAskedBesideTheGpusOtherCalls) {
  const pid_t job = spawn_sleeper();
  json gpu = gpu_with({{{"pid", job}, {"used_bytes", kGiB}, {"sm_util", 40}}});
  gpu["power_mw"] = 250000;
  write_scenario(
      {{"meet", {{"nvmlDeviceGetPowerUsage", 1}, {"nvmlDeviceGetProcessUtilization", 1}}},
       {"gpus", {gpu}}});
  const auto read = collect().gpus.at(0);
  EXPECT_FALSE(read.error) << read.error.value_or("");
  EXPECT_EQ(read.power_watts, 250.0);
  ASSERT_EQ(read.processes.size(), 1u);
  EXPECT_EQ(read.processes[0].sm_utilization_percent, 40u);
  EXPECT_EQ(calls("nvmlDeviceGetProcessUtilization"), 1u);
}

TEST_F(nvmlCalls, NoUtilisationSamplesAreAskedOfALostGpu) {
  json lost = gpu_with(json::array());
  lost["error"] = "gpu_lost";
  write_scenario({{"gpus", {lost}}});
  const auto read = collect().gpus.at(0);
  ASSERT_TRUE(read.error);
  EXPECT_EQ(calls("nvmlDeviceGetProcessUtilization"), 0u);
  EXPECT_EQ(calls("nvmlDeviceGetComputeRunningProcesses"), 0u);
}

}  // namespace
}  // namespace gpureap::testing
