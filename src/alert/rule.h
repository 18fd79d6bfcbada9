#pragma once
// An alert rule, from an [[alert]] table of the daemon's config: a condition over the
// daemon's samples that must hold for a while before the alert fires.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/finding.h"

namespace gpureap::alert {

enum class Condition {
  MemoryRatio,         // a GPU's used / total memory above `ratio_above`
  GhostMemory,         // memory of gone or inherited holders on a GPU above `bytes_above`
  UnattributedMemory,  // used memory the driver attributes to no process above `bytes_above`
  Finding,             // a doctor finding of `finding_code` and/or at least `finding_severity`
  PolicyAction,        // a cleanup policy acted (or would have): fires once per action
};
std::string_view to_string(Condition c);  // memory_ratio, ghost_memory, ...
std::optional<Condition> condition_from_string(std::string_view s);

struct Rule {
  std::string name;  // the alertname label
  unsigned line = 0;
  Condition condition = Condition::MemoryRatio;
  double ratio_above = 0;                            // MemoryRatio: 0..1
  uint64_t bytes_above = 0;                          // GhostMemory, UnattributedMemory
  std::optional<doctor::FindingCode> finding_code;   // Finding
  std::optional<doctor::Severity> finding_severity;  // Finding: this severity or worse
  std::optional<std::string> policy;                 // PolicyAction: only this policy's
  std::optional<unsigned> gpu;                       // only this GPU (the index gpureap shows)
  std::chrono::milliseconds for_duration{0};         // `for`: held this long before firing
  std::chrono::milliseconds repeat_interval{std::chrono::hours(4)};  // re-send while firing
  std::string severity = "warning";                                  // the severity label
  std::vector<std::string> sinks;                                    // empty: every sink
};

}  // namespace gpureap::alert
