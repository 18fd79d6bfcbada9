// Library-wide NVML functions of the double: init, errors, enumeration, versions, names.
#include <fstream>

#include "liveness.h"
#include "nvml_abi.h"
#include "runtime.h"

using fake_nvml::Scenario;

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  return fake_nvml::init("nvmlInit_v2");
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlInit(void) {
  return fake_nvml::init("nvmlInit");
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  return fake_nvml::shutdown("nvmlShutdown");
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  // NVML's return codes are an open set (each release adds some): as a number, so that the
  // codes not named here need no case each.
  switch (static_cast<int>(result)) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires reset";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "Driver/library version mismatch";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    default:
      return "Unknown Error";
  }
}

namespace {

nvmlReturn_t device_count(const char* function, unsigned int* deviceCount) {
  return fake_nvml::call(function, [&](const Scenario& scenario) {
    if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = static_cast<unsigned>(scenario.gpus.size());
    return NVML_SUCCESS;
  });
}

nvmlReturn_t handle_by_index(const char* function, unsigned int index, nvmlDevice_t* device) {
  return fake_nvml::call(function, [&](const Scenario& scenario) {
    if (device == nullptr || index >= scenario.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
    if (scenario.gpus[index].handle_error != NVML_SUCCESS) return scenario.gpus[index].handle_error;
    *device = fake_nvml::handle_for(index);
    return *device != nullptr ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
  });
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return device_count("nvmlDeviceGetCount_v2", deviceCount);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return device_count("nvmlDeviceGetCount", deviceCount);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                            nvmlDevice_t* device) {
  return handle_by_index("nvmlDeviceGetHandleByIndex_v2", index, device);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return handle_by_index("nvmlDeviceGetHandleByIndex", index, device);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return fake_nvml::call("nvmlSystemGetDriverVersion", [&](const Scenario& scenario) {
    return fake_nvml::copy_string(scenario.driver_version, version, length);
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return fake_nvml::call("nvmlSystemGetNVMLVersion", [&](const Scenario& scenario) {
    return fake_nvml::copy_string(scenario.nvml_version, version, length);
  });
}

// The scenario's name for a listed PID, else the process's comm, like the driver's view.
FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name,
                                                       unsigned int length) {
  return fake_nvml::call("nvmlSystemGetProcessName", [&](const Scenario& scenario) {
    for (const auto& gpu : scenario.gpus) {
      for (const auto& process : gpu.processes) {
        if (process.pid == pid && process.name) {
          return fake_nvml::copy_string(*process.name, name, length);
        }
      }
    }
    std::ifstream comm(scenario.proc_root + "/" + std::to_string(pid) + "/comm");
    std::string text;
    if (!std::getline(comm, text) || text.empty()) return NVML_ERROR_NOT_FOUND;
    return fake_nvml::copy_string(text, name, length);
  });
}
