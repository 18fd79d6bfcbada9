#pragma once
// The MIG scene the MIG tests share: GPU 0 in MIG mode, split into GPU instances 3 (3g.40gb,
// kMigUuid3) and 5 (1g.10gb); a trainer on 3 is gone and its forked worker keeps its 8 GiB; a
// job holds 2 GiB on 5.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "support.h"

namespace gpureap::testing {

inline constexpr const char* kMigUuid3 = "MIG-33333333-0000-0000-0000-000000000003";

// The NVML double's scenario of the scene; `gpu_used`: the GPU's used memory, where given.
inline nlohmann::json mig_scenario(const GoneTrainer& ghost, pid_t job,
                                   std::optional<uint64_t> gpu_used = std::nullopt) {
  nlohmann::json gpu{
      {"name", "NVIDIA H100 80GB HBM3"},
      {"uuid", "GPU-0000"},
      {"minor", 0},
      {"total_bytes", 80 * GiB},
      {"mig_mode", true},
      {"mig_devices",
       {{{"gpu_instance_id", 3},
         {"profile", "3g.40gb"},
         {"uuid", kMigUuid3},
         {"total_bytes", 40 * GiB}},
        {{"gpu_instance_id", 5}, {"profile", "1g.10gb"}, {"total_bytes", 10 * GiB}}}},
      {"processes", nlohmann::json::array({{{"pid", ghost.trainer},
                                            {"used_bytes", 8 * GiB},
                                            {"holders", {ghost.trainer, ghost.worker}},
                                            {"gpu_instance_id", 3},
                                            {"compute_instance_id", 0}},
                                           {{"pid", job},
                                            {"used_bytes", 2 * GiB},
                                            {"gpu_instance_id", 5},
                                            {"compute_instance_id", 0}}})}};
  if (gpu_used) gpu["used_bytes"] = *gpu_used;
  return {{"gpus", {gpu}}};
}

}  // namespace gpureap::testing
