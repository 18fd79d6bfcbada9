#pragma once
// The subset of the NVML C ABI that gpureap uses, declared here because NVML is loaded with
// dlopen and no NVIDIA header may be needed at build time. Layouts follow NVIDIA's nvml.h;
// the static_asserts pin the sizes the driver writes into, since a wrong size here means
// reading garbage (or overflowing a buffer) at run time.
#include <cstdint>

namespace gpureap::backend::nvml {

using nvmlReturn_t = int;

inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_ALREADY_INITIALIZED = 5;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_POWER = 8;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlReturn_t NVML_ERROR_IRQ_ISSUE = 11;
inline constexpr nvmlReturn_t NVML_ERROR_LIBRARY_NOT_FOUND = 12;
inline constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
inline constexpr nvmlReturn_t NVML_ERROR_CORRUPTED_INFOROM = 14;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_RESET_REQUIRED = 16;
inline constexpr nvmlReturn_t NVML_ERROR_OPERATING_SYSTEM = 17;
inline constexpr nvmlReturn_t NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18;
inline constexpr nvmlReturn_t NVML_ERROR_IN_USE = 19;
inline constexpr nvmlReturn_t NVML_ERROR_MEMORY = 20;
inline constexpr nvmlReturn_t NVML_ERROR_NO_DATA = 21;
inline constexpr nvmlReturn_t NVML_ERROR_VGPU_ECC_NOT_ENABLED = 22;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_RESOURCES = 23;
inline constexpr nvmlReturn_t NVML_ERROR_FREQ_NOT_SUPPORTED = 24;
inline constexpr nvmlReturn_t NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25;
inline constexpr nvmlReturn_t NVML_ERROR_DEPRECATED = 26;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_READY = 27;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_NOT_FOUND = 28;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_STATE = 29;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

// usedGpuMemory when the driver cannot tell (e.g. unprivileged on some drivers, MIG):
// unknown, not 16 EiB.
inline constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;
// gpuInstanceId / computeInstanceId when the GPU is not in MIG mode.
inline constexpr unsigned NVML_INSTANCE_ID_NOT_AVAILABLE = 0xFFFFFFFFu;

inline constexpr unsigned NVML_TEMPERATURE_GPU = 0;

// Buffer sizes NVML documents as sufficient.
inline constexpr unsigned NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
inline constexpr unsigned NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned NVML_PROCESS_NAME_BUFFER_SIZE = 256;

struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;

// nvmlDeviceGetMemoryInfo (v1): `used` includes the memory reserved by the driver.
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(nvmlMemory_t) == 24);

// nvmlDeviceGetMemoryInfo_v2: `used` excludes `reserved`; free = total - reserved - used.
struct nvmlMemory_v2_t {
  unsigned version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(nvmlMemory_v2_t) == 40);
// NVML_STRUCT_VERSION(Memory, 2): the size in the low bits, the version in the top byte.
// Passing a bare 2 makes NVML fail with ARGUMENT_VERSION_MISMATCH.
inline constexpr unsigned nvmlMemory_v2 = unsigned(sizeof(nvmlMemory_v2_t)) | (2u << 24);
static_assert(nvmlMemory_v2 == 0x02000028u);

// Records of the process-list functions. The stride differs per function version and, for
// _v3, per driver release, so the code reads them from byte buffers (process_records.h)
// instead of arrays of these structs; the structs document and pin the layouts.
struct nvmlProcessInfo_v1_t {  // nvmlDeviceGet*RunningProcesses (no suffix)
  unsigned pid;
  unsigned long long usedGpuMemory;
};
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16);

struct nvmlProcessInfo_v2_t {  // _v2, and _v3 on most drivers
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
};
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24);

struct nvmlProcessInfo_v3_r535_t {  // _v3 on some R535 drivers (confidential computing)
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
};
static_assert(sizeof(nvmlProcessInfo_v3_r535_t) == 32);

// nvmlDeviceGetPciInfo_v2/_v3. The v1 function writes an older, smaller struct whose
// 16-byte busId sits where busIdLegacy is, so a buffer of this type is large enough for all.
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};
static_assert(sizeof(nvmlPciInfo_t) == 68);

struct nvmlUtilization_t {
  unsigned gpu;
  unsigned memory;
};
static_assert(sizeof(nvmlUtilization_t) == 8);

struct nvmlProcessUtilizationSample_t {
  unsigned pid;
  unsigned long long timeStamp;  // CPU timestamp in microseconds
  unsigned smUtil;
  unsigned memUtil;
  unsigned encUtil;
  unsigned decUtil;
};
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);

// Function pointer types, one per signature. All process-list versions share one signature
// apart from the record type, so they take the buffer as void*.
using nvmlVoid_fn = nvmlReturn_t (*)();
using nvmlErrorString_fn = const char* (*)(nvmlReturn_t);
using nvmlDeviceGetCount_fn = nvmlReturn_t (*)(unsigned*);
using nvmlDeviceGetHandleByIndex_fn = nvmlReturn_t (*)(unsigned, nvmlDevice_t*);
using nvmlDeviceGetProcesses_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned*, void*);
using nvmlDeviceGetMemoryInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using nvmlDeviceGetMemoryInfo_v2_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*);
using nvmlDeviceGetPciInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using nvmlDeviceGetString_fn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned);
using nvmlDeviceGetUnsigned_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned*);
using nvmlDeviceGetUtilizationRates_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using nvmlDeviceGetTemperature_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned, unsigned*);
using nvmlDeviceGetMigMode_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned*, unsigned*);
// nvmlDeviceGetMigDeviceHandleByIndex(parent, index, &mig): NOT_FOUND for an empty slot.
using nvmlDeviceGetMigDeviceHandleByIndex_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned,
                                                                nvmlDevice_t*);
using nvmlDeviceGetProcessUtilization_fn = nvmlReturn_t (*)(nvmlDevice_t,
                                                            nvmlProcessUtilizationSample_t*,
                                                            unsigned*, unsigned long long);
using nvmlSystemGetString_fn = nvmlReturn_t (*)(char*, unsigned);
using nvmlSystemGetProcessName_fn = nvmlReturn_t (*)(unsigned, char*, unsigned);

}  // namespace gpureap::backend::nvml
