#pragma once
// NVIDIA's registry entry: NVML, its device nodes (/dev/nvidia*), --nvml-library, the kernel's
// Xids, nvidia-smi's reset and the words of NVIDIA's remedies.
#include <string>

#include "backend/registry.h"

namespace gpureap::backend::nvml {

BackendEntry nvml_entry();

// nvidia-smi's complaint about a failed reset turned into the next step (persistence mode,
// another client, ...); `gpu` is the global index.
std::string reset_failure_hint(const std::string& nvidia_smi_output, unsigned gpu);

}  // namespace gpureap::backend::nvml
