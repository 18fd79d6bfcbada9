#include "backend/registry.h"

#include "backend/nvml/nvml_backend.h"

namespace gpureap::backend {

const Registry& builtin_backends() {
  static const Registry registry{
      {"nvml", "nvidia", true, nvml::make_nvml_backend_for},
  };
  return registry;
}

}  // namespace gpureap::backend
