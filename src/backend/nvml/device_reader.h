#pragma once
// Reads one GPU: identity, memory, utilisation, temperature, power, MIG mode and process
// lists. A metric the GPU or library does not offer stays unknown; a call that fails in a
// way that makes the GPU untrustworthy sets Gpu::error, and a lost GPU stops being asked.
#include <cstdint>
#include <optional>
#include <string>

#include "backend/nvml/abi.h"
#include "backend/nvml/symbol_table.h"
#include "core/gpu.h"

namespace gpureap::backend::nvml {

// What stays true of a GPU while NVML stays initialised and hands out the same handle for its
// index: read once, then reused by every later collection (a daemon collects every few
// seconds). Total memory changes no more, but it comes with the memory call that is made
// anyway for what is used.
struct StaticFacts {
  nvmlDevice_t handle = nullptr;
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<unsigned> minor;
  std::optional<std::string> pci_bus_id;
};

// `known`: the GPU's facts from an earlier read, used when its handle is the same; set to
// this read's when every fact was read (a fact that failed is asked for again next time).
core::Gpu read_gpu(const SymbolTable& api, unsigned index, std::uint64_t pid_max,
                   std::optional<StaticFacts>& known);

}  // namespace gpureap::backend::nvml
