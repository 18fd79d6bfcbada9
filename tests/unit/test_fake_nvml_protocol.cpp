// The NVML double itself, called through its C ABI without gpureap's backend: it must
// behave like NVML where gpureap depends on it (init state, two-call protocol, struct
// versions, string sizes), or the backend tests would prove nothing.
#include <dlfcn.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "backend/nvml/abi.h"
#include "fake_nvml_fixture.h"

namespace gpureap::testing {
namespace {

using namespace backend::nvml;

class nvmlFakeProtocol : public FakeNvmlFixture {
 protected:
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
    FakeNvmlFixture::TearDown();
  }

  void load(const std::string& variant = "") {
    handle_ = dlopen(fake_nvml_library(variant).c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
  }

  template <class F>
  F fn(const char* name) {
    void* symbol = dlsym(handle_, name);
    EXPECT_NE(symbol, nullptr) << name;
    return reinterpret_cast<F>(symbol);
  }

  nvmlDevice_t device(unsigned index) {
    nvmlDevice_t device = nullptr;
    EXPECT_EQ(fn<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2")(index, &device),
              NVML_SUCCESS);
    return device;
  }

  void* handle_ = nullptr;
};

nlohmann::json three_processes_and_an_empty_gpu() {
  nlohmann::json processes = nlohmann::json::array();
  for (unsigned i = 0; i < 3; ++i) {
    processes.push_back({{"pid", 3000200 + i}, {"used_bytes", (i + 1) * kGiB}, {"leaked", true}});
  }
  return {{"gpus",
           {{{"total_bytes", 80 * kGiB}, {"reserved_bytes", kGiB}, {"processes", processes}},
            nlohmann::json::object()}}};
}

TEST_F(nvmlFakeProtocol, CallsBeforeInitAreRejected) {
  write_scenario(three_processes_and_an_empty_gpu());
  load();
  unsigned count = 0;
  EXPECT_EQ(fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(fn<nvmlVoid_fn>("nvmlShutdown")(), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(fn<nvmlVoid_fn>("nvmlInit_v2")(), NVML_SUCCESS);
  EXPECT_EQ(fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(fn<nvmlVoid_fn>("nvmlShutdown")(), NVML_SUCCESS);
  EXPECT_EQ(fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&count), NVML_ERROR_UNINITIALIZED);
}

TEST_F(nvmlFakeProtocol, ProcessListsFollowTheTwoCallProtocol) {
  write_scenario(three_processes_and_an_empty_gpu());
  load();
  ASSERT_EQ(fn<nvmlVoid_fn>("nvmlInit_v2")(), NVML_SUCCESS);
  auto list = fn<nvmlDeviceGetProcesses_fn>("nvmlDeviceGetComputeRunningProcesses_v2");

  unsigned count = 0;
  EXPECT_EQ(list(device(0), &count, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 3u);

  std::vector<nvmlProcessInfo_v2_t> records(5);
  count = 2;
  EXPECT_EQ(list(device(0), &count, records.data()), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 3u) << "a short buffer learns the needed count";

  count = 5;
  ASSERT_EQ(list(device(0), &count, records.data()), NVML_SUCCESS);
  ASSERT_EQ(count, 3u);
  EXPECT_EQ(records[2].pid, 3000202u);
  EXPECT_EQ(records[2].usedGpuMemory, 3 * kGiB);
  EXPECT_EQ(records[2].gpuInstanceId, 0xFFFFFFFFu);

  count = 1;
  EXPECT_EQ(list(device(0), &count, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  count = 0;
  EXPECT_EQ(list(device(1), &count, nullptr), NVML_SUCCESS) << "no processes: nothing to size";
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(list(nullptr, &count, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  fn<nvmlVoid_fn>("nvmlShutdown")();
}

TEST_F(nvmlFakeProtocol, MemoryInfoV2NeedsTheVersionedStructTag) {
  write_scenario(three_processes_and_an_empty_gpu());
  load();
  ASSERT_EQ(fn<nvmlVoid_fn>("nvmlInit_v2")(), NVML_SUCCESS);
  auto memory_v2 = fn<nvmlDeviceGetMemoryInfo_v2_fn>("nvmlDeviceGetMemoryInfo_v2");
  nvmlMemory_v2_t memory{};
  memory.version = 2;
  EXPECT_EQ(memory_v2(device(0), &memory), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  memory.version = nvmlMemory_v2;
  ASSERT_EQ(memory_v2(device(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 80 * kGiB);
  EXPECT_EQ(memory.reserved, kGiB);
  EXPECT_EQ(memory.used, 6 * kGiB);
  EXPECT_EQ(memory.free, 73 * kGiB);
  fn<nvmlVoid_fn>("nvmlShutdown")();
}

TEST_F(nvmlFakeProtocol, StringsThatDoNotFitAreRefused) {
  write_scenario({{"gpus", {{{"name", "NVIDIA H200"}}}}});
  load();
  ASSERT_EQ(fn<nvmlVoid_fn>("nvmlInit_v2")(), NVML_SUCCESS);
  char name[12] = {};
  auto get_name = fn<nvmlDeviceGetString_fn>("nvmlDeviceGetName");
  EXPECT_EQ(get_name(device(0), name, 11), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(get_name(device(0), name, 12), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H200");
  EXPECT_STREQ(fn<nvmlErrorString_fn>("nvmlErrorString")(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
  fn<nvmlVoid_fn>("nvmlShutdown")();
}

TEST_F(nvmlFakeProtocol, VariantsLackTheirSymbols) {
  load("v1_only");
  EXPECT_EQ(dlsym(handle_, "nvmlDeviceGetComputeRunningProcesses_v3"), nullptr);
  EXPECT_EQ(dlsym(handle_, "nvmlDeviceGetComputeRunningProcesses_v2"), nullptr);
  EXPECT_NE(dlsym(handle_, "nvmlDeviceGetComputeRunningProcesses"), nullptr);
  EXPECT_NE(dlsym(handle_, "nvmlDeviceGetMemoryInfo_v2"), nullptr);
  void* no_memory_v2 = dlopen(fake_nvml_library("no_memory_v2").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(no_memory_v2, nullptr);
  EXPECT_EQ(dlsym(no_memory_v2, "nvmlDeviceGetMemoryInfo_v2"), nullptr);
  EXPECT_NE(dlsym(no_memory_v2, "nvmlDeviceGetComputeRunningProcesses_v3"), nullptr);
  dlclose(no_memory_v2);
}

// A wedged driver: the named call never returns. A child makes the call so the test can
// kill it; the check is one-sided (a slow machine can only make it pass, never fail).
TEST_F(nvmlFakeProtocol, BlockCallNeverReturns) {
  write_scenario(
      {{"block_call", "nvmlDeviceGetTemperature"}, {"gpus", {{{"temperature_celsius", 50}}}}});
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    void* lib = dlopen(fake_nvml_library().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) _exit(2);
    reinterpret_cast<nvmlVoid_fn>(dlsym(lib, "nvmlInit_v2"))();
    nvmlDevice_t device = nullptr;
    reinterpret_cast<nvmlDeviceGetHandleByIndex_fn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"))(
        0, &device);
    unsigned power = 0;
    reinterpret_cast<nvmlDeviceGetUnsigned_fn>(dlsym(lib, "nvmlDeviceGetPowerUsage"))(device,
                                                                                      &power);
    (void)!write(pipe_fds[1], "S", 1);  // other calls still answer
    unsigned celsius = 0;
    reinterpret_cast<nvmlDeviceGetTemperature_fn>(dlsym(lib, "nvmlDeviceGetTemperature"))(
        device, NVML_TEMPERATURE_GPU, &celsius);
    (void)!write(pipe_fds[1], "R", 1);
    _exit(0);
  }
  children_.push_back(child);
  close(pipe_fds[1]);
  char byte = 0;
  ASSERT_EQ(read(pipe_fds[0], &byte, 1), 1);
  EXPECT_EQ(byte, 'S');
  pollfd waiting{pipe_fds[0], POLLIN, 0};
  EXPECT_EQ(poll(&waiting, 1, 300), 0) << "nvmlDeviceGetTemperature returned";
  close(pipe_fds[0]);
}

}  // namespace
}  // namespace gpureap::testing
