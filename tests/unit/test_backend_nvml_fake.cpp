// The NVML backend against the test double loaded with dlopen: real ABI, real symbol
// lookup, scenarios for the situations a driver can be in.
#include <unistd.h>

#include <fstream>
#include <string>

#include "backend/nvml/process_records.h"
#include "fake_nvml_fixture.h"

namespace gpureap::testing {
namespace {

using core::GpuProcessKind;
using nlohmann::json;

class nvmlFakeLibrary : public FakeNvmlFixture {};

std::string comm_of(pid_t pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

TEST_F(nvmlFakeLibrary, HealthyMultiGpu) {
  const pid_t self = getpid();
  const pid_t child = spawn_sleeper();
  write_scenario(
      {{"driver_version", "550.54.15"},
       {"nvml_version", "12.550.54.15"},
       {"gpus",
        {{{"name", "NVIDIA H200"},
          {"uuid", "GPU-11111111-2222-3333-4444-555555555555"},
          {"minor", 3},
          {"pci_bus_id", "00000000:17:00.0"},
          {"total_bytes", 140 * kGiB},
          {"reserved_bytes", 256 * kMiB},
          {"driver_held_bytes", 512 * kMiB},
          {"utilization_percent", 87},
          {"memory_utilization_percent", 40},
          {"temperature_celsius", 61},
          {"power_mw", 512500},
          {"mig_mode", false},
          {"processes",
           {{{"pid", self}, {"used_bytes", 2 * kGiB}, {"name", "trainer"}, {"sm_util", 55}},
            {{"pid", child}, {"used_bytes", kGiB}, {"kind", "graphics"}}}}},
         {{"name", "NVIDIA H200"},
          {"total_bytes", 140 * kGiB},
          {"driver_held_bytes", 300 * kMiB},
          {"processes",
           {{{"pid", 3000001},
             {"used_bytes", "not_available"},
             {"kind", "mps"},
             {"leaked", true}}}}}}}});

  const core::BackendReport report = collect();
  ASSERT_TRUE(report.available) << report.error.value_or("");
  EXPECT_FALSE(report.error.has_value());
  EXPECT_FALSE(report.error_code.has_value());
  EXPECT_EQ(report.name, "nvml");
  EXPECT_EQ(report.library, fake_nvml_library());
  EXPECT_EQ(report.driver_version, "550.54.15");
  ASSERT_NE(report.detail("nvml_version"), nullptr);
  EXPECT_EQ(*report.detail("nvml_version"), "12.550.54.15");
  EXPECT_EQ(report.name, "nvml");
  EXPECT_EQ(report.vendor, "nvidia");
  EXPECT_TRUE(report.warnings.empty()) << report.warnings.front();
  ASSERT_EQ(report.gpus.size(), 2u);

  const core::Gpu& gpu0 = report.gpus[0];
  EXPECT_FALSE(gpu0.error.has_value()) << *gpu0.error;
  EXPECT_EQ(gpu0.index, 0u);
  EXPECT_EQ(gpu0.name, "NVIDIA H200");
  EXPECT_EQ(gpu0.uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(gpu0.minor, 3u) << "minor comes from the driver, not the index";
  EXPECT_EQ(gpu0.pci_bus_id, "00000000:17:00.0");
  const unsigned long long used0 = 512 * kMiB + 2 * kGiB + kGiB;
  EXPECT_EQ(gpu0.memory.total_bytes, 140 * kGiB);
  EXPECT_EQ(gpu0.memory.reserved_bytes, 256 * kMiB);
  EXPECT_EQ(gpu0.memory.used_bytes, used0);
  EXPECT_EQ(gpu0.memory.free_bytes, 140 * kGiB - used0 - 256 * kMiB);
  EXPECT_EQ(gpu0.utilization_percent, 87u);
  EXPECT_EQ(gpu0.memory_utilization_percent, 40u);
  EXPECT_EQ(gpu0.temperature_celsius, 61u);
  ASSERT_TRUE(gpu0.power_watts.has_value());
  EXPECT_DOUBLE_EQ(*gpu0.power_watts, 512.5);
  EXPECT_EQ(gpu0.split_mode, false);
  EXPECT_FALSE(gpu0.processes_error.has_value()) << *gpu0.processes_error;
  ASSERT_EQ(gpu0.processes.size(), 2u);
  EXPECT_EQ(gpu0.processes[0].pid, self);
  EXPECT_EQ(gpu0.processes[0].kind, GpuProcessKind::Compute);
  EXPECT_EQ(gpu0.processes[0].used_bytes, 2 * kGiB);
  EXPECT_EQ(gpu0.processes[0].name, "trainer");
  EXPECT_EQ(gpu0.processes[0].sm_utilization_percent, 55u);
  EXPECT_FALSE(gpu0.processes[0].gpu_instance_id.has_value());
  EXPECT_EQ(gpu0.processes[1].pid, child);
  EXPECT_EQ(gpu0.processes[1].kind, GpuProcessKind::Graphics);
  EXPECT_EQ(gpu0.processes[1].used_bytes, kGiB);
  EXPECT_EQ(gpu0.processes[1].name, comm_of(child));
  EXPECT_FALSE(gpu0.processes[1].sm_utilization_percent.has_value());

  const core::Gpu& gpu1 = report.gpus[1];
  EXPECT_FALSE(gpu1.error.has_value());
  EXPECT_EQ(gpu1.index, 1u);
  EXPECT_EQ(gpu1.minor, 1u);
  EXPECT_FALSE(gpu1.temperature_celsius.has_value()) << "not in the scenario: NOT_SUPPORTED";
  EXPECT_FALSE(gpu1.power_watts.has_value());
  EXPECT_FALSE(gpu1.split_mode.has_value());
  EXPECT_FALSE(gpu1.utilization_percent.has_value());
  EXPECT_EQ(gpu1.memory.used_bytes, 300 * kMiB) << "unknown process memory adds nothing";
  ASSERT_EQ(gpu1.processes.size(), 1u);
  EXPECT_EQ(gpu1.processes[0].pid, 3000001);
  EXPECT_EQ(gpu1.processes[0].kind, GpuProcessKind::ServerClient);
  EXPECT_FALSE(gpu1.processes[0].used_bytes.has_value()) << "not available is unknown";
  EXPECT_FALSE(gpu1.processes[0].name.has_value());
}

json leaked(unsigned pid, unsigned long long used, unsigned gi = 0xFFFFFFFFu,
            unsigned ci = 0xFFFFFFFFu) {
  return {{"pid", pid},
          {"used_bytes", used},
          {"leaked", true},
          {"gpu_instance_id", gi},
          {"compute_instance_id", ci}};
}

json three_mig_processes() {
  return json::array({leaked(3000010, 10 * kGiB, 1, 0), leaked(3000011, 11 * kGiB, 2, 0),
                      leaked(3000012, 12 * kGiB, 2, 1)});
}

void expect_three_mig_processes(const core::Gpu& gpu) {
  EXPECT_FALSE(gpu.processes_error.has_value()) << *gpu.processes_error;
  ASSERT_EQ(gpu.processes.size(), 3u);
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_EQ(gpu.processes[i].pid, static_cast<pid_t>(3000010 + i));
    EXPECT_EQ(gpu.processes[i].used_bytes, (10 + i) * kGiB);
  }
  EXPECT_EQ(gpu.processes[2].gpu_instance_id, 2u);
  EXPECT_EQ(gpu.processes[2].compute_instance_id, 1u);
}

TEST_F(nvmlFakeLibrary, ThirtyTwoByteV3Layout) {
  write_scenario({{"process_info_v3_stride", 32},
                  {"gpus", {{{"mig_mode", true}, {"processes", three_mig_processes()}}}}});
  const core::BackendReport report = collect();
  ASSERT_TRUE(report.available) << report.error.value_or("");
  EXPECT_EQ(report.gpus[0].split_mode, true);
  expect_three_mig_processes(report.gpus[0]);
  // The probed layout is the backend's own fact about this GPU.
  using Detail = std::pair<std::string, std::string>;
  EXPECT_EQ(report.gpus[0].details,
            (std::vector<Detail>{{"process_record_layout",
                                  "nvmlDeviceGetComputeRunningProcesses_v3, 32-byte records"}}));
}

TEST_F(nvmlFakeLibrary, CorruptRecordsAreNotShown) {
  write_scenario({{"gpus",
                   {{{"corrupt_process_records", true}, {"processes", three_mig_processes()}},
                    {{"processes", three_mig_processes()}}}}});
  const core::BackendReport report = collect();
  ASSERT_TRUE(report.available);
  EXPECT_TRUE(report.gpus[0].processes.empty());
  EXPECT_EQ(report.gpus[0].processes_error, backend::nvml::kLayoutNotRecognised);
  EXPECT_FALSE(report.gpus[0].error.has_value()) << "the GPU itself is fine";
  expect_three_mig_processes(report.gpus[1]);
}

TEST_F(nvmlFakeLibrary, NotAvailableMemoryIsUnknown) {
  write_scenario({{"gpus",
                   {{{"driver_held_bytes", kGiB},
                     {"processes",
                      {{{"pid", 3000020}, {"used_bytes", "not_available"}, {"leaked", true}},
                       {{"pid", 3000021}, {"used_bytes", 3 * kGiB}, {"leaked", true}}}}}}}});
  const core::Gpu gpu = collect().gpus.at(0);
  ASSERT_EQ(gpu.processes.size(), 2u);
  EXPECT_FALSE(gpu.processes[0].used_bytes.has_value());
  EXPECT_EQ(gpu.processes[1].used_bytes, 3 * kGiB);
  EXPECT_EQ(gpu.memory.used_bytes, 4 * kGiB);
}

TEST_F(nvmlFakeLibrary, ALostGpuDoesNotHideTheOthers) {
  const pid_t self = getpid();
  write_scenario({{"gpus",
                   {{{"name", "A"}, {"processes", {{{"pid", self}, {"used_bytes", kGiB}}}}},
                    {{"name", "B"}, {"error", "gpu_lost"}},
                    {{"name", "C"}, {"processes", {{{"pid", self}, {"used_bytes", 2 * kGiB}}}}}}}});
  const core::BackendReport report = collect();
  ASSERT_TRUE(report.available);
  ASSERT_EQ(report.gpus.size(), 3u);
  EXPECT_FALSE(report.gpus[0].error.has_value());
  EXPECT_EQ(report.gpus[0].name, "A");
  ASSERT_EQ(report.gpus[0].processes.size(), 1u);
  EXPECT_EQ(report.gpus[0].processes[0].used_bytes, kGiB);

  const core::Gpu& lost = report.gpus[1];
  EXPECT_TRUE(contains(lost.error, "GPU 1 has fallen off the bus")) << lost.error.value_or("");
  EXPECT_TRUE(contains(lost.error, "dmesg"));
  EXPECT_FALSE(lost.name.has_value());
  EXPECT_FALSE(lost.memory.total_bytes.has_value());
  EXPECT_TRUE(lost.processes.empty());

  EXPECT_FALSE(report.gpus[2].error.has_value());
  EXPECT_EQ(report.gpus[2].name, "C");
  ASSERT_EQ(report.gpus[2].processes.size(), 1u);
  EXPECT_EQ(report.gpus[2].processes[0].used_bytes, 2 * kGiB);
}

TEST_F(nvmlFakeLibrary, AGpuWhoseHandleFailsIsReportedWithItsError) {
  write_scenario({{"gpus", {{{"name", "A"}}, {{"handle_error", "gpu_lost"}}}}});
  const core::BackendReport report = collect();
  ASSERT_EQ(report.gpus.size(), 2u);
  EXPECT_EQ(report.gpus[0].name, "A");
  EXPECT_TRUE(contains(report.gpus[1].error, "GPU 1 has fallen off the bus"));
}

struct InitCase {
  const char* init_error;
  const char* expected;
  const char* error_code;
};
// Keeps test names stable (the default prints the pointers' bytes).
void PrintTo(const InitCase& c, std::ostream* os) {
  *os << c.init_error;
}

class nvmlFakeInitError : public FakeNvmlFixture, public ::testing::WithParamInterface<InitCase> {};

TEST_P(nvmlFakeInitError, IsReportedWithItsNextStep) {
  write_scenario({{"init_error", GetParam().init_error}, {"gpus", {json::object()}}});
  auto nvml = backend();
  const core::BackendReport report = nvml->collect();
  EXPECT_FALSE(report.available);
  EXPECT_TRUE(report.gpus.empty());
  EXPECT_EQ(report.library, fake_nvml_library());
  EXPECT_TRUE(contains(report.error, GetParam().expected)) << report.error.value_or("(none)");
  ASSERT_TRUE(report.error_code.has_value());
  EXPECT_STREQ(core::to_string(*report.error_code), GetParam().error_code);

  // The driver comes back: the same backend recovers on its next collect.
  write_scenario({{"gpus", {json::object()}}});
  const core::BackendReport recovered = nvml->collect();
  EXPECT_TRUE(recovered.available) << recovered.error.value_or("");
  EXPECT_FALSE(recovered.error_code.has_value());
  EXPECT_EQ(recovered.gpus.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    AllCodes, nvmlFakeInitError,
    ::testing::Values(
        InitCase{"driver_not_loaded",
                 "the NVIDIA kernel driver is not loaded (nvmlInit_v2 returned "
                 "NVML_ERROR_DRIVER_NOT_LOADED): load it with `modprobe nvidia`",
                 "driver-not-loaded"},
        InitCase{"lib_rm_version_mismatch",
                 "NVML library and kernel driver versions differ: the driver was upgraded "
                 "without reloading the kernel module",
                 "version-mismatch"},
        InitCase{"no_permission", "no permission to use the NVIDIA devices", "no-permission"},
        InitCase{"library_not_found", "reinstall the NVIDIA driver", "init-failed"},
        InitCase{"unknown", "NVML could not start: Unknown Error", "init-failed"}),
    [](const ::testing::TestParamInfo<InitCase>& info) {
      return std::string(info.param.init_error);
    });

TEST_F(nvmlFakeLibrary, MissingLibraryNamesThePathAndTheFix) {
  backend::nvml::NvmlOptions options;
  options.library_path = dir_ + "/libnvidia-ml.so.1";
  const core::BackendReport report = backend::nvml::make_nvml_backend(options)->collect();
  EXPECT_FALSE(report.available);
  EXPECT_TRUE(contains(report.error, dir_ + "/libnvidia-ml.so.1 could not be loaded"))
      << report.error.value_or("");
  EXPECT_TRUE(contains(report.error, "--nvml-library"));
  EXPECT_EQ(report.error_code, core::BackendErrorCode::LibraryNotFound);
}

TEST_F(nvmlFakeLibrary, ALibraryWithoutNvmlIsRejected) {
  backend::nvml::NvmlOptions options;
  options.library_path = "libm.so.6";
  const core::BackendReport report = backend::nvml::make_nvml_backend(options)->collect();
  EXPECT_FALSE(report.available);
  EXPECT_TRUE(contains(report.error, "lacks required functions")) << report.error.value_or("");
  EXPECT_TRUE(contains(report.error, "nvmlInit_v2 / nvmlInit"));
  EXPECT_EQ(report.error_code, core::BackendErrorCode::SymbolMissing);
}

TEST_F(nvmlFakeLibrary, VariantWithoutV3ProcessFunctionsUsesV2) {
  // A 32-byte _v3 stride would break a reader that assumed v3; _v2 is always 24 bytes.
  write_scenario(
      {{"process_info_v3_stride", 32}, {"gpus", {{{"processes", three_mig_processes()}}}}});
  const core::BackendReport report = collect("no_v3");
  ASSERT_TRUE(report.available) << report.error.value_or("");
  EXPECT_EQ(report.library, fake_nvml_library("no_v3"));
  expect_three_mig_processes(report.gpus[0]);
  using Detail = std::pair<std::string, std::string>;
  EXPECT_EQ(report.gpus[0].details,
            (std::vector<Detail>{{"process_record_layout",
                                  "nvmlDeviceGetComputeRunningProcesses_v2, 24-byte records"}}));
}

TEST_F(nvmlFakeLibrary, VariantWithOnlyV1ProcessFunctionsHasNoInstanceIds) {
  write_scenario({{"gpus", {{{"processes", three_mig_processes()}}}}});
  const core::Gpu gpu = collect("v1_only").gpus.at(0);
  EXPECT_FALSE(gpu.processes_error.has_value());
  ASSERT_EQ(gpu.processes.size(), 3u);
  EXPECT_EQ(gpu.processes[1].pid, 3000011);
  EXPECT_EQ(gpu.processes[1].used_bytes, 11 * kGiB);
  EXPECT_FALSE(gpu.processes[1].gpu_instance_id.has_value()) << "16-byte records have none";
}

TEST_F(nvmlFakeLibrary, VariantWithoutMemoryInfoV2HasNoReservedFigure) {
  write_scenario({{"gpus",
                   {{{"total_bytes", 80 * kGiB},
                     {"reserved_bytes", 512 * kMiB},
                     {"driver_held_bytes", kGiB},
                     {"processes", {leaked(3000030, 2 * kGiB)}}}}}});
  const core::Gpu v1 = collect("no_memory_v2").gpus.at(0);
  EXPECT_FALSE(v1.memory.reserved_bytes.has_value());
  EXPECT_EQ(v1.memory.used_bytes, 3 * kGiB + 512 * kMiB) << "v1 used includes reserved";
  EXPECT_EQ(v1.memory.free_bytes, 80 * kGiB - 3 * kGiB - 512 * kMiB);

  const core::Gpu v2 = collect().gpus.at(0);
  EXPECT_EQ(v2.memory.reserved_bytes, 512 * kMiB);
  EXPECT_EQ(v2.memory.used_bytes, 3 * kGiB);
  EXPECT_EQ(v2.memory.free_bytes, v1.memory.free_bytes);
}

// A library older than MIG lacks four functions of one capability: one note names them all. It
// is a warning only where a GPU is (or may be) in MIG mode; elsewhere it is --verbose's alone.
TEST_F(nvmlFakeLibrary, VariantWithoutMigFunctionsSaysSoOnceAndOnlyWhereMigIsUsed) {
  const std::string note =
      "this NVML library lacks the functions for MIG instances (nvmlDeviceGetMaxMigDeviceCount, "
      "nvmlDeviceGetMigDeviceHandleByIndex, nvmlDeviceGetGpuInstanceId, "
      "nvmlDeviceGetComputeInstanceId), so they are unknown";
  write_scenario({{"gpus", {{{"mig_mode", false}, {"processes", {leaked(3000040, kGiB)}}}}}});
  core::BackendReport report = collect("no_mig");
  ASSERT_TRUE(report.available) << report.error.value_or("");
  EXPECT_TRUE(report.warnings.empty()) << report.warnings.front();
  ASSERT_NE(report.detail("quiet_notes"), nullptr);
  EXPECT_EQ(*report.detail("quiet_notes"), note);

  write_scenario({{"gpus", {{{"mig_mode", true}, {"processes", {leaked(3000040, kGiB)}}}}}});
  report = collect("no_mig");
  EXPECT_EQ(report.warnings, std::vector<std::string>{note});
  EXPECT_EQ(report.detail("quiet_notes"), nullptr);

  // The whole library: nothing is missing, nothing is said.
  report = collect();
  EXPECT_TRUE(report.warnings.empty()) << report.warnings.front();
  EXPECT_EQ(report.detail("quiet_notes"), nullptr);
}

TEST_F(nvmlFakeLibrary, APidInSeveralListsIsCountedOnce) {
  write_scenario({{"gpus",
                   {{{"processes",
                      {{{"pid", 3000040},
                        {"used_bytes", kGiB},
                        {"leaked", true},
                        {"kind", {"compute", "graphics"}}},
                       {{"pid", 3000041},
                        {"used_bytes", kGiB},
                        {"leaked", true},
                        {"kind", {"graphics", "mps"}}}}}}}}});
  const core::Gpu gpu = collect().gpus.at(0);
  ASSERT_EQ(gpu.processes.size(), 2u);
  EXPECT_EQ(gpu.processes[0].kind, GpuProcessKind::Compute);
  EXPECT_EQ(gpu.processes[1].kind, GpuProcessKind::ServerClient)
      << "the MPS list marks its clients";
  EXPECT_EQ(gpu.memory.used_bytes, 2 * kGiB);
}

}  // namespace
}  // namespace gpureap::testing
