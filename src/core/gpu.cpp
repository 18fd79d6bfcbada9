#include "core/gpu.h"

namespace gpureap::core {

const char* to_string(GpuProcessKind kind) {
  switch (kind) {
    case GpuProcessKind::Compute:
      return "compute";
    case GpuProcessKind::Graphics:
      return "graphics";
    case GpuProcessKind::Mps:
      return "mps";
  }
  return "?";
}

}  // namespace gpureap::core
