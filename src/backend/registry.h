#pragma once
// The one list of GPU backends gpureap knows. Adding a vendor is one folder under src/backend
// and one line in builtin_backends(); every command and the daemon build their backends here.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/gpu_backend.h"
#include "backend/settings.h"

namespace gpureap::backend {

struct BackendEntry {
  std::string name;    // "nvml": the backend's name in reports, JSON and metrics
  std::string vendor;  // "nvidia"
  // It calls into a vendor library, which blocks forever on a wedged driver: each instance is
  // then called behind a watchdog. A backend that reads only kernel files (fdinfo, sysfs) and
  // takes part in the holder scan is called directly.
  bool calls_driver_library = true;
  std::function<std::unique_ptr<GpuBackend>(const BackendSettings&)> make;
  // The vendor's GPUs as its kernel module describes them, without its library (identity and
  // device files, nothing measured): a backend that does not answer still reports which device
  // file is which GPU. Empty for a vendor whose backend reads the kernel alone anyway.
  std::function<std::vector<core::Gpu>(const BackendSettings&)> kernel_gpus;
};

using Registry = std::vector<BackendEntry>;

// Every backend gpureap ships, in the order their GPUs are numbered.
const Registry& builtin_backends();

}  // namespace gpureap::backend
