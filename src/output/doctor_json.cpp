#include "output/doctor_json.h"

#include "core/field_count.h"
#include "output/snapshot_json.h"

namespace gpureap::output {

// The fields written below: a field added to a finding stops the build here until it is
// written (or said to be kept out, as restricted_evidence is: doctor/restricted_evidence.h
// moves it into `evidence` for a reader allowed to see it). RemedyStep has constructors, so it
// cannot be counted: its three fields are `steps`.
static_assert(core::field_count<doctor::Facet>() == 4, "a Facet field is not in the document");
static_assert(core::field_count<doctor::Finding>() == 11, "a Finding field is not in the document");

nlohmann::json doctor_to_json(const core::Snapshot& s,
                              const std::vector<doctor::Finding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : findings) {
    nlohmann::json codes = nlohmann::json::array(), facets = nlohmann::json::array(),
                   remedy = nlohmann::json::array(), steps = nlohmann::json::array();
    for (auto c : f.codes()) codes.push_back(doctor::to_string(c));
    for (const auto& x : f.facets)
      facets.push_back({{"code", doctor::to_string(x.code)},
                        {"pid", x.pid ? nlohmann::json(x.pid) : nlohmann::json()},
                        {"severity", doctor::to_string(x.severity)},
                        {"text", x.text}});
    for (const auto& step : f.remedy) {
      remedy.push_back(step.line());
      steps.push_back(
          {{"kind", doctor::to_string(step.kind)}, {"command", step.command}, {"why", step.why}});
    }
    list.push_back({{"code", doctor::to_string(f.code)},
                    {"codes", codes},
                    {"severity", doctor::to_string(f.severity)},
                    {"summary", f.summary},
                    {"gpus", f.gpus},
                    {"pids", f.pids},
                    {"memory_bytes", f.memory_bytes},
                    {"evidence", f.evidence},
                    {"facets", facets},
                    {"explanation", f.explanation},
                    {"remedy", remedy},
                    {"steps", steps}});
  }
  return {{"schema", kDoctorSchema},
          {"snapshot", snapshot_to_json(s)},
          {"findings", list},
          {"worst_severity", doctor::to_string(doctor::worst(findings))}};
}

}  // namespace gpureap::output
