#pragma once
// Which MIG instance a capability device file opens. A process that runs on a MIG instance
// holds, besides its GPU's /dev/nvidia<N>, the instance's capability files
// /dev/nvidia-caps/nvidia-cap<M> (the major is the "nvidia-caps" line of /proc/devices). The
// kernel module names each existing instance's minor in
// <proc-root>/driver/nvidia/capabilities/gpu<G>/mig/gi<I>/access (the GPU instance) and
// .../gi<I>/ci<C>/access (one of its compute instances), as "DeviceFileMinor: M", where G is the
// GPU's device minor (MIG user guide, "Device Nodes and Capabilities").
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::backend::nvml {

struct MigCapability {
  unsigned gpu_minor = 0;                    // the parent GPU's /dev/nvidia<gpu_minor>
  unsigned gpu_instance = 0;                 // GI id
  std::optional<unsigned> compute_instance;  // CI id; empty for the GPU instance's own file
  unsigned device_minor = 0;                 // /dev/nvidia-caps/nvidia-cap<device_minor>

  bool operator==(const MigCapability&) const = default;
};

// The minor an `access` file gives ("DeviceFileMinor: 12"); empty when it gives none or a
// malformed one.
std::optional<unsigned> parse_capability_minor(std::string_view access_text);

// Every instance's capability files the kernel describes, ordered by GPU minor, GPU instance,
// then compute instance (the GPU instance's own file first). Empty when the folder is missing
// (no MIG instance, another driver, a container without it); a file that cannot be read or names
// no minor is left out, never guessed.
std::vector<MigCapability> read_mig_capabilities(const std::string& proc_root);

// The instance whose file has `device_minor`, or null.
const MigCapability* find_capability(const std::vector<MigCapability>& capabilities,
                                     unsigned device_minor);

}  // namespace gpureap::backend::nvml
