#include "backend/nvml/errors.h"

#include <string>

#include "procfs/resource_shortage.h"

namespace gpureap::backend::nvml {
namespace {

// "(nvmlInit_v2 returned NVML_ERROR_DRIVER_NOT_LOADED)": the exact code, to search for.
std::string returned(const char* function, nvmlReturn_t rc) {
  return std::string("(") + function + " returned " + return_code_name(rc) + ")";
}

std::string described(const char* nvml_text, nvmlReturn_t rc) {
  if (nvml_text != nullptr && nvml_text[0] != '\0') return nvml_text;
  return std::string("NVML error ") + std::to_string(rc);
}

}  // namespace

const char* return_code_name(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED:
      return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION:
      return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "NVML_ERROR_ALREADY_INITIALIZED";
    case NVML_ERROR_NOT_FOUND:
      return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "NVML_ERROR_INSUFFICIENT_POWER";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT:
      return "NVML_ERROR_TIMEOUT";
    case NVML_ERROR_IRQ_ISSUE:
      return "NVML_ERROR_IRQ_ISSUE";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "NVML_ERROR_CORRUPTED_INFOROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED:
      return "NVML_ERROR_RESET_REQUIRED";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "NVML_ERROR_OPERATING_SYSTEM";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_IN_USE:
      return "NVML_ERROR_IN_USE";
    case NVML_ERROR_MEMORY:
      return "NVML_ERROR_MEMORY";
    case NVML_ERROR_NO_DATA:
      return "NVML_ERROR_NO_DATA";
    case NVML_ERROR_VGPU_ECC_NOT_ENABLED:
      return "NVML_ERROR_VGPU_ECC_NOT_ENABLED";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return "NVML_ERROR_FREQ_NOT_SUPPORTED";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_DEPRECATED:
      return "NVML_ERROR_DEPRECATED";
    case NVML_ERROR_NOT_READY:
      return "NVML_ERROR_NOT_READY";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "NVML_ERROR_GPU_NOT_FOUND";
    case NVML_ERROR_INVALID_STATE:
      return "NVML_ERROR_INVALID_STATE";
    case NVML_ERROR_UNKNOWN:
      return "NVML_ERROR_UNKNOWN";
    default:
      return "NVML_ERROR_(unrecognised)";
  }
}

core::Error init_error(nvmlReturn_t rc, const char* function, const char* nvml_text) {
  const std::string code = returned(function, rc);
  switch (rc) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return {"the NVIDIA kernel driver is not loaded " + code,
              "load it with `modprobe nvidia` or check `dmesg`"};
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return {
          "NVML library and kernel driver versions differ: the driver was upgraded "
          "without reloading the kernel module " +
              code,
          "reboot, or reload the nvidia modules (`rmmod nvidia_uvm nvidia_drm "
          "nvidia_modeset nvidia && modprobe nvidia`) when no GPU is in use"};
    case NVML_ERROR_NO_PERMISSION:
      return {"no permission to use the NVIDIA devices " + code,
              "check the permissions of /dev/nvidiactl and /dev/nvidia*, or run as root"};
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return {"NVML could not find a library it needs " + code,
              "reinstall the NVIDIA driver's user-space libraries"};
    case NVML_ERROR_GPU_IS_LOST:
      return {"a GPU has fallen off the bus " + code,
              "check `dmesg` for Xid errors; reseat the card or reboot"};
    case NVML_ERROR_IRQ_ISSUE:
      return {"the NVIDIA kernel driver reports an interrupt problem " + code,
              "check `dmesg`; a reboot is usually needed"};
    case NVML_ERROR_INSUFFICIENT_POWER:
      return {"a GPU lacks power " + code, "check the power cables of every GPU"};
    default:
      return {"NVML could not start: " + described(nvml_text, rc) + " " + code,
              "check that `nvidia-smi` works and look at `dmesg`"};
  }
}

bool init_may_have_lacked_a_file(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_NO_PERMISSION:
    case NVML_ERROR_OPERATING_SYSTEM:
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
    case NVML_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

core::Error init_starved_error(nvmlReturn_t rc, const char* function, size_t open, size_t limit,
                               size_t hard) {
  const std::string held = open >= limit
                               ? "all " + std::to_string(limit) + " of its "
                               : std::to_string(open) + " of its " + std::to_string(limit) + " ";
  return {"the NVIDIA driver's library could not initialise: gpureap has " + held +
              "file descriptors open (its limit of open files, RLIMIT_NOFILE), too few left for "
              "the library to open the driver's control device /dev/nvidiactl; its code says "
              "nothing of the driver or of permissions " +
              returned(function, rc),
          procfs::raise_descriptor_limit(limit, hard)};
}

core::BackendErrorCode init_error_code(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return core::BackendErrorCode::DriverNotLoaded;
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return core::BackendErrorCode::VersionMismatch;
    case NVML_ERROR_NO_PERMISSION:
      return core::BackendErrorCode::NoPermission;
    default:
      return core::BackendErrorCode::InitFailed;
  }
}

core::Error gpu_error(unsigned index, nvmlReturn_t rc, const char* function,
                      const char* nvml_text) {
  const std::string gpu = "GPU " + std::to_string(index);
  const std::string code = returned(function, rc);
  switch (rc) {
    case NVML_ERROR_GPU_IS_LOST:
      return {gpu + " has fallen off the bus " + code,
              "its memory and processes cannot be read; check `dmesg` for Xid 79, reseat "
              "the card or reboot"};
    case NVML_ERROR_RESET_REQUIRED:
      return {gpu + " needs a reset " + code, "reset it with `nvidia-smi -r -i " +
                                                  std::to_string(index) +
                                                  "` once nothing uses it, or reboot"};
    case NVML_ERROR_CORRUPTED_INFOROM:
      return {gpu + " has a corrupted infoROM " + code,
              "the card may need service; check `nvidia-smi -q` and `dmesg`"};
    case NVML_ERROR_TIMEOUT:
      return {gpu + " did not answer in time " + code, "the driver may be wedged; check `dmesg`"};
    default:
      return {gpu + ": " + described(nvml_text, rc) + " " + code,
              "check `nvidia-smi -i " + std::to_string(index) + "` and `dmesg`"};
  }
}

const char* nvml_error_text(const SymbolTable& api, nvmlReturn_t rc) {
  if (!api.has(Fn::ErrorString)) return nullptr;
  return api.get<nvmlErrorString_fn>(Fn::ErrorString)(rc);
}

bool is_metric_unavailable(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_NOT_FOUND:
    case NVML_ERROR_NO_DATA:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_NO_PERMISSION:
    case NVML_ERROR_DEPRECATED:
    case NVML_ERROR_NOT_READY:
      return true;
    default:
      return false;
  }
}

}  // namespace gpureap::backend::nvml
