#pragma once
// AMD's compute driver (KFD, used by ROCm) under <sys-root>/class/kfd/kfd: one /dev/kfd for
// every AMD GPU, its GPU nodes (topology/nodes/N, with a gpu_id and a PCI location) and the
// processes it has a context for (proc/<pid>/vram_<gpu_id>: bytes of VRAM on that GPU). Like
// NVIDIA's driver lists, a PID stays listed while its context lives, even once the PID is gone.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpureap::backend::drm {

struct KfdNode {
  unsigned gpu_id = 0;                     // nonzero: CPU nodes have gpu_id 0 and are not listed
  std::optional<std::string> pci_address;  // from properties: domain and location_id
};

struct KfdProcess {
  pid_t pid = 0;
  std::vector<std::pair<unsigned, uint64_t>> vram;  // (gpu_id, bytes), by gpu_id
};

struct KfdReading {
  bool present = false;               // <sys-root>/class/kfd/kfd exists
  std::optional<dev_t> device;        // class/kfd/kfd/dev, "MAJ:MIN"
  std::vector<KfdNode> nodes;         // GPU nodes, by gpu_id
  std::vector<KfdProcess> processes;  // by pid
  std::vector<std::string> warnings;
};

KfdReading read_kfd(const std::string& sys_root);

}  // namespace gpureap::backend::drm
