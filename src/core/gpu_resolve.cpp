#include "core/gpu_resolve.h"

namespace gpureap::core {

GpuResolution resolve_gpu(const Snapshot& snapshot, const std::string& text) {
  auto ref = parse_gpu_option(text);
  if (!ref) return {{}, ScopeError{ref.error(), false}};
  auto place = resolve_gpu_ref(snapshot, *ref);
  if (!place) return {{}, ScopeError{place.error(), false}};
  return {*place, check_gpu_index(snapshot, place->index)};
}

}  // namespace gpureap::core
