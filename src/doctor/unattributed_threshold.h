#pragma once
// How much memory the driver may use beyond what it lists for processes before doctor warns.
// Some GPUs and drivers keep a few hundred MiB for themselves, so a healthy idle GPU must
// stay quiet: the default is the larger of 1 GiB and 1 % of the GPU's memory.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpureap::doctor {

struct UnattributedThreshold {
  std::optional<uint64_t> bytes = 1ull << 30;
  std::optional<double> ratio = 0.01;  // of the GPU's total memory

  // The larger of the parts that are set; the absolute part alone when the total is unknown.
  uint64_t for_total(std::optional<uint64_t> total_bytes) const;
  std::string text() const;  // "1.0 GiB or 1 %, whichever is larger"
};

// "1GiB", "5%", or both: "512MiB,2%" (the larger applies).
core::Result<UnattributedThreshold> parse_unattributed_threshold(std::string_view text);

}  // namespace gpureap::doctor
