#pragma once
// A GPU driver backend: reports GPUs, the processes the driver lists on them, and the device
// numbers of the files that reach each GPU (the join ties holders to GPUs through those).
#include "core/gpu.h"
#include "procfs/fd_observer.h"

namespace gpureap::backend {

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  // Never throws; a backend that cannot work returns available=false with an error. GPUs are
  // numbered in the backend's own way; DriverReading renumbers them across backends.
  virtual core::BackendReport collect() = 0;
  // A backend that learns from the holders' open GPU files (DRM fdinfo) takes part in the
  // holder scan through this observer, and reports in collect() what the last scan saw.
  virtual procfs::FdObserver* fd_observer() { return nullptr; }
};

}  // namespace gpureap::backend
