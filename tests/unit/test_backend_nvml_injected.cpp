// The backend over an injected resolver that offers only an old, minimal NVML: required
// functions, v1 memory info and v1 process lists. Checks what degrades and what does not.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "backend/nvml/abi.h"
#include "backend/nvml/resolver_backend.h"
#include "byte_units.h"

namespace gpureap::backend::nvml {
namespace {

using testing::kGiB;

int g_init_calls = 0;
int g_shutdown_calls = 0;

nvmlReturn_t init_v1() {
  ++g_init_calls;
  return NVML_SUCCESS;
}
nvmlReturn_t shutdown() {
  ++g_shutdown_calls;
  return NVML_SUCCESS;
}
nvmlReturn_t count_v1(unsigned* count) {
  *count = 1;
  return NVML_SUCCESS;
}
nvmlReturn_t handle_v1(unsigned index, nvmlDevice_t* device) {
  if (index != 0) return NVML_ERROR_INVALID_ARGUMENT;
  static int token;
  *device = reinterpret_cast<nvmlDevice_t>(&token);
  return NVML_SUCCESS;
}
// v1 semantics: used includes what the driver reserves.
nvmlReturn_t memory_v1(nvmlDevice_t, nvmlMemory_t* memory) {
  *memory = nvmlMemory_t{16 * kGiB, 10 * kGiB, 6 * kGiB};
  return NVML_SUCCESS;
}
nvmlReturn_t compute_v1(nvmlDevice_t, unsigned* count, void* infos) {
  if (infos == nullptr || *count < 1) {
    *count = 1;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  const nvmlProcessInfo_v1_t record{4242, 5 * kGiB};
  std::memcpy(infos, &record, sizeof record);
  *count = 1;
  return NVML_SUCCESS;
}

void* as_symbol(auto function) {
  return reinterpret_cast<void*>(function);
}

SymbolResolver old_nvml() {
  static const std::map<std::string, void*> symbols = {
      {"nvmlInit", as_symbol(&init_v1)},
      {"nvmlShutdown", as_symbol(&shutdown)},
      {"nvmlDeviceGetCount", as_symbol(&count_v1)},
      {"nvmlDeviceGetHandleByIndex", as_symbol(&handle_v1)},
      {"nvmlDeviceGetMemoryInfo", as_symbol(&memory_v1)},
      {"nvmlDeviceGetComputeRunningProcesses", as_symbol(&compute_v1)},
  };
  return [](const char* name) -> void* {
    auto it = symbols.find(name);
    return it == symbols.end() ? nullptr : it->second;
  };
}

TEST(nvmlInjectedBackend, OldNvmlReportsWhatItCanAndLeavesTheRestUnknown) {
  g_init_calls = g_shutdown_calls = 0;
  {
    auto backend = make_nvml_backend_from_resolver({}, old_nvml(), "old-nvml");
    const core::BackendReport report = backend->collect();
    ASSERT_TRUE(report.available) << report.error.value_or("");
    EXPECT_EQ(report.library, "old-nvml");
    ASSERT_EQ(report.gpus.size(), 1u);
    const core::Gpu& gpu = report.gpus[0];
    EXPECT_FALSE(gpu.error.has_value()) << *gpu.error;
    EXPECT_EQ(gpu.memory.total_bytes, 16 * kGiB);
    EXPECT_EQ(gpu.memory.used_bytes, 6 * kGiB);
    EXPECT_EQ(gpu.memory.free_bytes, 10 * kGiB);
    EXPECT_FALSE(gpu.memory.reserved_bytes.has_value()) << "v1 has no reserved figure";
    EXPECT_FALSE(gpu.temperature_celsius.has_value());
    EXPECT_FALSE(gpu.name.has_value());
    EXPECT_FALSE(gpu.power_watts.has_value());
    EXPECT_FALSE(report.driver_version.has_value());
    ASSERT_EQ(gpu.processes.size(), 1u);
    EXPECT_EQ(gpu.processes[0].pid, 4242);
    EXPECT_EQ(gpu.processes[0].used_bytes, 5 * kGiB);
    EXPECT_FALSE(gpu.processes[0].gpu_instance_id.has_value());
    EXPECT_FALSE(gpu.processes[0].name.has_value());
    bool warned_about_temperature = false;
    for (const auto& warning : report.warnings) {
      if (warning.find("nvmlDeviceGetTemperature") != std::string::npos) {
        warned_about_temperature = true;
      }
    }
    EXPECT_TRUE(warned_about_temperature);

    // A daemon collects again: NVML is initialised once and reused.
    EXPECT_TRUE(backend->collect().available);
    EXPECT_EQ(g_init_calls, 1);
    EXPECT_EQ(g_shutdown_calls, 0);
  }
  EXPECT_EQ(g_shutdown_calls, 1) << "nvmlShutdown when the backend goes away";
}

TEST(nvmlInjectedBackend, MissingRequiredFunctionMakesTheBackendUnavailable) {
  auto backend = make_nvml_backend_from_resolver(
      {}, [](const char*) -> void* { return nullptr; }, "empty");
  const core::BackendReport report = backend->collect();
  EXPECT_FALSE(report.available);
  ASSERT_TRUE(report.error.has_value());
  EXPECT_NE(report.error->find("nvmlInit_v2 / nvmlInit"), std::string::npos) << *report.error;
  EXPECT_EQ(report.error_code, core::BackendErrorCode::SymbolMissing);
  EXPECT_TRUE(report.gpus.empty());
}

// A broken library that claims four billion processes: nothing is allocated from that count.
nvmlReturn_t compute_absurd(nvmlDevice_t, unsigned* count, void*) {
  *count = 0xFFFFFFF0u;
  return NVML_ERROR_INSUFFICIENT_SIZE;
}

TEST(nvmlInjectedBackend, AnAbsurdProcessCountIsNotTrustedNorAllocated) {
  std::map<std::string, void*> symbols = {
      {"nvmlInit", as_symbol(&init_v1)},
      {"nvmlShutdown", as_symbol(&shutdown)},
      {"nvmlDeviceGetCount", as_symbol(&count_v1)},
      {"nvmlDeviceGetHandleByIndex", as_symbol(&handle_v1)},
      {"nvmlDeviceGetMemoryInfo", as_symbol(&memory_v1)},
      {"nvmlDeviceGetComputeRunningProcesses", as_symbol(&compute_absurd)},
  };
  auto backend = make_nvml_backend_from_resolver(
      {},
      [symbols](const char* name) -> void* {
        auto it = symbols.find(name);
        return it == symbols.end() ? nullptr : it->second;
      },
      "absurd-nvml");
  const core::BackendReport report = backend->collect();
  ASSERT_TRUE(report.available) << report.error.value_or("");
  ASSERT_EQ(report.gpus.size(), 1u);
  EXPECT_TRUE(report.gpus[0].processes.empty());
  ASSERT_TRUE(report.gpus[0].processes_error.has_value());
  EXPECT_NE(report.gpus[0].processes_error->find("4294967280"), std::string::npos)
      << *report.gpus[0].processes_error;
}

}  // namespace
}  // namespace gpureap::backend::nvml
