#include "backend/registry.h"

#include "backend/drm/drm_backend.h"
#include "backend/nvml/nvml_backend.h"

namespace gpureap::backend {

const Registry& builtin_backends() {
  static const Registry registry{
      {"nvml", "nvidia", true, nvml::make_nvml_backend_for},
      drm::amd_entry(),
      drm::intel_entry(),
  };
  return registry;
}

}  // namespace gpureap::backend
