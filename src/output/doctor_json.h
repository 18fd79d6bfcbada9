#pragma once
// The `gpureap.doctor/v1` JSON document: the snapshot and doctor's findings on it, as
// `doctor --json` prints it and the daemon's /api/v1/findings serves it.
#include <nlohmann/json.hpp>
#include <vector>

#include "core/snapshot.h"
#include "doctor/finding.h"

namespace gpureap::output {

inline constexpr const char* kDoctorSchema = "gpureap.doctor/v1";

nlohmann::json doctor_to_json(const core::Snapshot& s,
                              const std::vector<doctor::Finding>& findings);

}  // namespace gpureap::output
