#include "backend/registry.h"

#include "backend/drm/drm_backend.h"
#include "backend/nvml/kernel_gpus.h"
#include "backend/nvml/nvml_backend.h"

namespace gpureap::backend {

const Registry& builtin_backends() {
  static const Registry registry{
      {"nvml", "nvidia", true, nvml::make_nvml_backend_for,
       [](const BackendSettings& s) { return nvml::read_kernel_gpus(s.proc_root); }},
      drm::amd_entry(),
      drm::intel_entry(),
  };
  return registry;
}

}  // namespace gpureap::backend
