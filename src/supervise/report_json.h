#pragma once
// The `gpureap.run/v1` JSON document (--report FILE). Stable: later versions add fields,
// never rename. Durations are seconds (numbers), memory is bytes, signals are names.
#include <nlohmann/json.hpp>

#include "supervise/run_report.h"

namespace gpureap::supervise {

inline constexpr const char* kRunSchema = "gpureap.run/v1";

nlohmann::json run_report_to_json(const RunReport& report);

}  // namespace gpureap::supervise
