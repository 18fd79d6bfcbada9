#pragma once
#include <optional>
// `gpureap doctor` output: findings grouped by severity, most memory first; and the
// `gpureap.doctor/v1` JSON document.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "doctor/finding.h"
#include "output/style.h"

namespace gpureap::output {

inline constexpr const char* kDoctorSchema = "gpureap.doctor/v1";

// `gpu`: doctor --gpu N, the summary counts that GPU only.
std::string render_doctor(const core::Snapshot& s, const std::vector<doctor::Finding>& findings,
                          const Style& style, std::optional<unsigned> gpu = std::nullopt);
nlohmann::json doctor_to_json(const core::Snapshot& s,
                              const std::vector<doctor::Finding>& findings);

}  // namespace gpureap::output
