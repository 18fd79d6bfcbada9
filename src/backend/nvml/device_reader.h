#pragma once
// Reads one GPU: identity, memory, utilisation, temperature, power, MIG mode and process
// lists. A metric the GPU or library does not offer stays unknown; a call that fails in a
// way that makes the GPU untrustworthy sets Gpu::error, and a lost GPU stops being asked.
#include <cstdint>

#include "backend/nvml/symbol_table.h"
#include "core/gpu.h"

namespace gpureap::backend::nvml {

core::Gpu read_gpu(const SymbolTable& api, unsigned index, std::uint64_t pid_max);

}  // namespace gpureap::backend::nvml
