#pragma once
// A GPU driver backend: reports GPUs and the processes the driver lists on them.
#include "core/gpu.h"

namespace gpureap::backend {

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  // Never throws; a backend that cannot work returns available=false with an error.
  virtual core::BackendReport collect() = 0;
};

}  // namespace gpureap::backend
